"""RocketMQ remoting frames: a pure codec (REMOTING-01).

A frame is a 4-byte big-endian length (of everything after it), a 4-byte word whose high byte is the header's
serialization (0 JSON, 1 ROCKETMQ) and whose low 24 bits are the header's length, the header, then the
body. The JSON header is ``RemotingSerializable``'s form of ``RemotingCommand`` (``code``, ``language``,
``version``, ``opaque``, ``flag``, ``remark``, ``extFields``); the ROCKETMQ header is
``RocketMQSerializable``'s binary form. Read from ``remoting/src/main/java/org/apache/rocketmq/remoting``
at rocketmq-all-4.9.8 (``protocol/RemotingCommand.encode`` / ``decode``, ``RocketMQSerializable``,
``netty/NettyDecoder``: frames up to 16 MiB).

Anything malformed raises ``FrameError``, never another exception: the server closes that one
connection.
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field

from reference_impl.rules import remoting as remoting_rules

FRAME_MAX_LENGTH = remoting_rules.FRAME_MAX_LENGTH
"""``NettyDecoder``'s default ``com.rocketmq.remoting.frameMaxLength``."""
JSON, ROCKETMQ = 0, 1
RESPONSE_FLAG, ONEWAY_FLAG = 1, 2
LANGUAGES = ("JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO", "PHP", "OMS",
             "RUST")


class FrameError(ValueError):
    """A frame that cannot be read: the connection that sent it is closed."""


@dataclass
class Command:
    """A ``RemotingCommand``: a request or a response (``flag`` bit 0), maybe one-way (bit 1)."""

    code: int
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    language: str = "JAVA"
    version: int = 0
    serialize: int = JSON
    connection: int = field(default=0, compare=False)
    """Which connection a request came on (set by the server; never encoded)."""

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RESPONSE_FLAG)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & ONEWAY_FLAG)

    def response(self, code: int, remark: str | None = None, ext: dict[str, str] | None = None,
                 body: bytes = b"") -> "Command":
        """The answer to this request: same opaque, the response flag, the request's serialization."""
        return Command(code, self.opaque, RESPONSE_FLAG, remark, dict(ext or {}), body, "JAVA", self.version,
                       self.serialize)


def _json_header(cmd: Command) -> bytes:
    header: dict[str, object] = {"code": cmd.code, "language": cmd.language, "version": cmd.version,
                                 "opaque": cmd.opaque, "flag": cmd.flag, "serializeTypeCurrentRPC": "JSON"}
    if cmd.remark is not None:
        header["remark"] = cmd.remark
    if cmd.ext:
        header["extFields"] = cmd.ext
    return json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _rocketmq_header(cmd: Command) -> bytes:
    remark = (cmd.remark or "").encode("utf-8")
    ext = b"".join(struct.pack(">h", len(k.encode())) + k.encode() + struct.pack(">i", len(v.encode())) + v.encode()
                   for k, v in cmd.ext.items())
    language = LANGUAGES.index(cmd.language) if cmd.language in LANGUAGES else LANGUAGES.index("OTHER")
    return (struct.pack(">hbhii", cmd.code, language, cmd.version, cmd.opaque, cmd.flag)
            + struct.pack(">i", len(remark)) + remark + struct.pack(">i", len(ext)) + ext)


def encode(cmd: Command) -> bytes:
    """``RemotingCommand.encode``: the whole frame, length prefix included."""
    header = _rocketmq_header(cmd) if cmd.serialize == ROCKETMQ else _json_header(cmd)
    length = 4 + len(header) + len(cmd.body)
    return struct.pack(">ii", length, remoting_rules.header_word(cmd.serialize, len(header))) + header + cmd.body


def _text(value: object, name: str) -> str:
    """A header string; a JSON number or boolean is read as its text, as the broker's map of strings does."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    raise FrameError(f"header field {name} is {type(value).__name__}, not a string")


def _int(value: object, name: str, default: int = 0) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not -(1 << 31) <= value < (1 << 31):
        raise FrameError(f"header field {name} is not a 32-bit integer: {value!r}")
    return value


def _decode_json(header: bytes) -> Command:
    try:
        data = json.loads(header.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise FrameError(f"bad JSON header: {exc}") from None
    if not isinstance(data, dict):
        raise FrameError("the JSON header is not an object")
    ext = data.get("extFields") or {}
    if not isinstance(ext, dict):
        raise FrameError("extFields is not an object")
    remark = data.get("remark")
    language = data.get("language", "JAVA")
    return Command(code=_int(data.get("code"), "code"), opaque=_int(data.get("opaque"), "opaque"),
                   flag=_int(data.get("flag"), "flag"), remark=None if remark is None else _text(remark, "remark"),
                   ext={_text(k, "extFields key"): _text(v, f"extFields.{k}") for k, v in ext.items() if v is not None},
                   language=language if isinstance(language, str) else "OTHER",
                   version=_int(data.get("version"), "version"), serialize=JSON)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise FrameError(f"the ROCKETMQ header ends after {len(self.data)} bytes, {self.pos + n} needed")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str) -> int:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def text(self, short: bool, limit: int) -> str | None:
        """``RocketMQSerializable.readStr``: a length (short or int), then UTF-8; 0 is null."""
        n = self.unpack(">h" if short else ">i")
        if n == 0:
            return None
        if n < 0 or n > limit:
            raise FrameError(f"string length {n} exceeds the header's {limit}")
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FrameError(f"bad UTF-8 in the header: {exc}") from None


def _decode_rocketmq(header: bytes) -> Command:
    """``RocketMQSerializable.rocketMQProtocolDecode``."""
    r = _Reader(header)
    code, language, version, opaque, flag = (r.unpack(">h"), r.unpack(">b"), r.unpack(">h"), r.unpack(">i"),
                                              r.unpack(">i"))
    remark = r.text(False, len(header))
    ext: dict[str, str] = {}
    ext_length = r.unpack(">i")
    if ext_length > len(header):
        raise FrameError(f"extFields length {ext_length} exceeds the header's {len(header)}")
    end = r.pos + max(ext_length, 0)
    while r.pos < end:
        key = r.text(True, ext_length)
        value = r.text(False, ext_length)
        if key is not None and value is not None:
            ext[key] = value
    return Command(code=code, opaque=opaque, flag=flag, remark=remark, ext=ext,
                   language=LANGUAGES[language] if 0 <= language < len(LANGUAGES) else "OTHER", version=version,
                   serialize=ROCKETMQ)


def decode(payload: bytes) -> Command:
    """``RemotingCommand.decode`` of a frame's payload (everything after the length prefix)."""
    if len(payload) < 4:
        raise FrameError(f"a frame of {len(payload)} bytes has no header length")
    (word,) = struct.unpack(">I", payload[:4])
    kind, header_length = remoting_rules.split_header_word(word)
    if header_length > len(payload) - 4:
        raise FrameError(f"decode error, bad header length: {header_length}")
    header = payload[4:4 + header_length]
    if kind == JSON:
        cmd = _decode_json(header)
    elif kind == ROCKETMQ:
        cmd = _decode_rocketmq(header)
    else:
        raise FrameError(f"unknown serialization type {kind}")
    cmd.body = payload[4 + header_length:]
    return cmd


class FrameSplitter:
    """Cuts a byte stream into frame payloads (``NettyDecoder``: a length field, at most 16 MiB with it)."""

    def __init__(self, max_length: int = FRAME_MAX_LENGTH) -> None:
        self.buffer = bytearray()
        self.max_length = max_length

    def feed(self, data: bytes) -> list[bytes]:
        self.buffer += data
        out = []
        while len(self.buffer) >= 4:
            (length,) = struct.unpack(">i", self.buffer[:4])
            # under 4 bytes there is no header-length word: Java's decode fails and closes the connection too
            if length < 4 or not remoting_rules.frame_length_ok(length, self.max_length):
                largest = self.max_length - remoting_rules.LENGTH_FIELD_BYTES
                raise FrameError(f"frame length {length} is outside 4..{largest}")
            if len(self.buffer) < 4 + length:
                break
            out.append(bytes(self.buffer[4:4 + length]))
            del self.buffer[:4 + length]
        return out
