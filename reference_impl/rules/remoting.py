"""The remoting protocol's frame word (REMOTING-01). Pure functions.

A frame is a 4-byte length (of everything after it), then a 4-byte word: the serialization type in its
high byte and the header's length in the low three bytes, then the header, then the body. A decoder
takes frames of at most ``FRAME_MAX_LENGTH`` bytes (``com.rocketmq.remoting.frameMaxLength``), the 4-byte
length field included.
"""
from __future__ import annotations

FRAME_MAX_LENGTH = 16 * 1024 * 1024
JSON, ROCKETMQ = 0, 1
"""``SerializeType`` codes."""


def header_word(serialize_type: int, header_length: int) -> int:
    """``RemotingCommand.markProtocolType``: the type in the high byte, the length in the low 24 bits (REMOTING-01)."""
    return ((serialize_type & 0xFF) << 24) | (header_length & 0xFFFFFF)


def split_header_word(word: int) -> tuple[int, int]:
    """``getProtocolType`` and ``getHeaderLength`` of a frame word read as a signed int (REMOTING-01)."""
    return (word >> 24) & 0xFF, word & 0xFFFFFF


LENGTH_FIELD_BYTES = 4
"""``NettyDecoder``'s ``lengthFieldLength``, which is also its ``lengthFieldEndOffset``."""


def frame_length_ok(length: int, max_length: int = FRAME_MAX_LENGTH) -> bool:
    """``NettyDecoder`` (``LengthFieldBasedFrameDecoder(FRAME_MAX_LENGTH, 0, 4, 0, 4)``) on a length field of
    ``length``: a negative one is corrupt, and the frame it makes, ``length + 4`` bytes with the field, must
    not exceed the maximum; else the decoder throws and the connection is closed (REMOTING-01)."""
    return length >= 0 and length + LENGTH_FIELD_BYTES <= max_length
