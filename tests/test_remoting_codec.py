"""The remoting frame codec: what it encodes it decodes, in both header forms; any bytes at all either
decode or raise FrameError, never anything else."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from frontends.remoting.codec import (
    FRAME_MAX_LENGTH,
    JSON,
    LANGUAGES,
    ROCKETMQ,
    Command,
    FrameError,
    FrameSplitter,
    decode,
    encode,
)

texts = st.text(max_size=20)
commands = st.builds(
    Command, code=st.integers(-32768, 32767), opaque=st.integers(-(1 << 31), (1 << 31) - 1), flag=st.integers(0, 3),
    remark=st.one_of(st.none(), st.text(min_size=1, max_size=30)),
    ext=st.dictionaries(st.text(min_size=1, max_size=10), st.text(min_size=1, max_size=20), max_size=5),
    body=st.binary(max_size=64), language=st.sampled_from(LANGUAGES), version=st.integers(0, 32767),
    serialize=st.sampled_from([JSON, ROCKETMQ]))


@given(commands)
def test_a_frame_decodes_to_what_was_encoded(cmd: Command) -> None:
    frame = encode(cmd)
    (length,) = struct.unpack(">i", frame[:4])
    assert length == len(frame) - 4
    assert frame[4] == cmd.serialize  # the serialization is the header-length word's high byte
    assert decode(frame[4:]) == cmd


@given(st.binary(max_size=200))
def test_any_bytes_decode_or_raise_frame_error(payload: bytes) -> None:
    try:
        decode(payload)
    except FrameError:
        pass


@given(commands, st.binary(max_size=40), st.integers(1, 7))
def test_a_mangled_rocketmq_header_raises_frame_error_only(cmd: Command, junk: bytes, cut: int) -> None:
    frame = bytearray(encode(Command(**{**cmd.__dict__, "serialize": ROCKETMQ})))
    frame[12:12 + len(junk)] = junk[: max(0, len(frame) - 12)]
    try:
        decode(bytes(frame[4:len(frame) - cut]))
    except FrameError:
        pass


@given(st.lists(commands, min_size=1, max_size=4), st.integers(1, 9))
def test_the_splitter_cuts_a_stream_at_any_chunk_size(cmds: list[Command], chunk: int) -> None:
    stream = b"".join(encode(c) for c in cmds)
    splitter, payloads = FrameSplitter(), []
    for i in range(0, len(stream), chunk):
        payloads += splitter.feed(stream[i:i + chunk])
    assert [decode(p) for p in payloads] == cmds


@pytest.mark.parametrize("length", [-1, 0, 3, FRAME_MAX_LENGTH - 3, FRAME_MAX_LENGTH + 1])
def test_a_length_outside_the_limit_is_refused(length: int) -> None:
    with pytest.raises(FrameError, match="outside"):
        FrameSplitter().feed(struct.pack(">i", length) + b"\0" * 8)


def test_a_json_header_names_what_is_wrong() -> None:
    def frame(header: bytes) -> bytes:
        return struct.pack(">i", len(header)) + header

    with pytest.raises(FrameError, match="bad JSON header"):
        decode(frame(b"{not json"))
    with pytest.raises(FrameError, match="code is not a 32-bit integer"):
        decode(frame(b'{"code": "ten"}'))
    with pytest.raises(FrameError, match="extFields is not an object"):
        decode(frame(b'{"code": 10, "extFields": [1]}'))
    assert decode(frame(b'{"code": 10, "extFields": {"queueId": 3, "batch": false}}')).ext == {"queueId": "3",
                                                                                                  "batch": "false"}
