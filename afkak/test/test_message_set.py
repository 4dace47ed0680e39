"""create_message, create_message_set and MessageSet."""

from __future__ import annotations

import gzip
import zlib

from hypothesis import given, strategies as st
from twisted.trial.unittest import SynchronousTestCase

from afkak import message_set
from afkak.codec import CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, CODEC_ZSTD
from afkak.common import Message, SendRequest, UnsupportedCodecError
from afkak.message_set import MessageSet, create_message, create_message_set, flatten
from afkak.test.helpers import needs_codecs

AFKAK21_INNER = (
    b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x11(h\xedg\x00\x00\x00\x00\x00\x02k1"
    b"\x00\x00\x00\x01a\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x10\xcc\x83\x99\n\x00"
    b"\x00\x00\x00\x00\x02k1\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    b"\x0f\xc8\xd6k\x88\x00\x00\xff\xff\xff\xff\x00\x00\x00\x01b"
)
SNAPPY21 = (
    b"T\x00\x00\x19\x01\x10\x11(h\xedg\x05\x0f\x1c\x02k1\x00\x00\x00\x01a\x05\r\t\x01\x10"
    b"\x10\xcc\x83\x99\n\x05\x0b\x18\x02k1\xff\xff\xff\xff\x05\x0c\t\x01<\x0f\xc8\xd6k"
    b"\x88\x00\x00\xff\xff\xff\xff\x00\x00\x00\x01b"
)
NOT_BYTES = ["text", 1, 1.5, bytearray(b"x"), memoryview(b"x"), [b"x"], object()]


class CreateMessageTests(SynchronousTestCase):
    def test_fields(self) -> None:
        self.assertEqual(create_message(b"v"), Message(0, 0, None, b"v"))
        self.assertEqual(create_message(b"v", b"k"), Message(0, 0, b"k", b"v"))
        self.assertEqual(create_message(None, b"k"), Message(0, 0, b"k", None))
        message = create_message(b"v")
        self.assertIsNone(message.timestamp)
        self.assertEqual(message.headers, ())

    def test_payload_type(self) -> None:
        for bad in NOT_BYTES:
            with self.assertRaises(TypeError):
                create_message(bad)  # type: ignore[arg-type]

    def test_key_type(self) -> None:
        for bad in NOT_BYTES:
            with self.assertRaises(TypeError):
                create_message(b"v", bad)  # type: ignore[arg-type]


@needs_codecs(CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD)
class CreateMessageSetTests(SynchronousTestCase):
    requests = [
        SendRequest("t", b"k1", [b"a", None], None),
        SendRequest("t", None, [b"b"], None),
    ]
    expected = [
        Message(0, 0, b"k1", b"a"),
        Message(0, 0, b"k1", None),
        Message(0, 0, None, b"b"),
    ]

    def test_no_codec(self) -> None:
        messages = create_message_set(self.requests)
        self.assertIsInstance(messages, list)
        self.assertEqual(messages, self.expected)
        self.assertEqual(messages.codec, CODEC_NONE)

    def test_codec_gives_afkak_21s_wrapper(self) -> None:
        for codec in (CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD):
            messages = create_message_set(self.requests, codec)
            self.assertIsInstance(messages, MessageSet)
            self.assertEqual(messages.codec, codec)
            [wrapper] = messages
            self.assertEqual(wrapper[:3], (0, codec, None))
            self.assertEqual(flatten(messages), (self.expected, codec))
            self.assertEqual(flatten([wrapper]), (self.expected, codec))

    def test_wrapper_value_is_afkak_21s(self) -> None:
        # afkak 21.5's KafkaCodec._encode_message_set of self.expected.
        self.assertEqual(
            zlib.decompress(create_message_set(self.requests, CODEC_GZIP)[0].value, 31),
            AFKAK21_INNER,
        )

    def test_afkak_21_wrappers_flatten(self) -> None:
        # Built by afkak 21.5's create_message_set (snappy without xerial framing).
        gzip21 = Message(0, CODEC_GZIP, None, gzip.compress(AFKAK21_INNER))
        self.assertEqual(flatten([gzip21]), (self.expected, CODEC_GZIP))
        self.assertEqual(flatten([Message(0, CODEC_SNAPPY, None, SNAPPY21)])[0], self.expected)

    def test_mixed_plain_and_wrappers(self) -> None:
        wrapper = create_message_set(self.requests, CODEC_LZ4)[0]
        plain = Message(0, 0, b"p", b"q")
        flat, codec = flatten([plain, wrapper, plain, wrapper])
        self.assertEqual(flat, [plain, *self.expected, plain, *self.expected])
        self.assertEqual(codec, CODEC_LZ4)
        # The list's own codec wins; the first wrapper's otherwise.
        gzip_wrapper = create_message_set(self.requests, CODEC_GZIP)[0]
        self.assertEqual(flatten([wrapper, gzip_wrapper])[1], CODEC_LZ4)
        self.assertEqual(flatten(MessageSet([wrapper], CODEC_ZSTD))[1], CODEC_ZSTD)
        self.assertEqual(flatten([plain]), ([plain], CODEC_NONE))

    def test_wrapper_without_message_set(self) -> None:
        for value in (b"not compressed", None, zlib.compress(b"x")):
            with self.assertRaises(ValueError):
                flatten([Message(0, CODEC_GZIP, None, value)])
        with self.assertRaises(ValueError):
            flatten([Message(0, 5, None, b"x")])

    def test_plain_tuples(self) -> None:
        messages = create_message_set([("t", b"k", [b"v"], None)], CODEC_GZIP)
        self.assertEqual(flatten(messages)[0], [Message(0, 0, b"k", b"v")])

    def test_empty(self) -> None:
        self.assertEqual(create_message_set([], CODEC_ZSTD), [])

    def test_unknown_codec(self) -> None:
        for codec in (-1, 5, 7, 0x08, None, "gzip", 1.0, True):
            with self.assertRaises(UnsupportedCodecError):
                create_message_set(self.requests, codec)  # type: ignore[arg-type]

    def test_codec_library_missing(self) -> None:
        missing = {**message_set._AVAILABLE, CODEC_SNAPPY: lambda: False}
        self.patch(message_set, "_AVAILABLE", missing)
        with self.assertRaises(UnsupportedCodecError) as cm:
            create_message_set(self.requests, CODEC_SNAPPY)
        self.assertIn("afkak[snappy]", str(cm.exception))
        self.assertEqual(create_message_set(self.requests, CODEC_GZIP).codec, CODEC_GZIP)

    def test_type_errors(self) -> None:
        with self.assertRaises(TypeError):
            create_message_set([SendRequest("t", None, ["text"], None)])
        with self.assertRaises(TypeError):
            create_message_set([SendRequest("t", "key", [b"v"], None)])

    @given(
        st.lists(
            st.tuples(
                st.one_of(st.none(), st.binary()),
                st.lists(st.one_of(st.none(), st.binary()), max_size=4),
            ),
            max_size=4,
        ),
        st.sampled_from([CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD]),
    )
    def test_one_message_per_payload_in_order(
        self, spec: list[tuple[bytes | None, list[bytes | None]]], codec: int
    ) -> None:
        requests = [SendRequest("t", key, payloads, None) for key, payloads in spec]
        messages, _ = flatten(create_message_set(requests, codec))
        self.assertEqual(
            [(m.key, m.value) for m in messages],
            [(key, payload) for key, payloads in spec for payload in payloads],
        )


@needs_codecs(CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD)
class MessageSetTests(SynchronousTestCase):
    def test_equality(self) -> None:
        messages = [Message(0, 0, None, b"v")]
        self.assertEqual(MessageSet(messages, CODEC_GZIP), MessageSet(messages, CODEC_GZIP))
        self.assertNotEqual(MessageSet(messages, CODEC_GZIP), MessageSet(messages, CODEC_LZ4))
        self.assertEqual(MessageSet(messages, CODEC_GZIP), messages)
        self.assertEqual(messages, MessageSet(messages, CODEC_GZIP))
        self.assertNotEqual(MessageSet(messages), [])

    def test_unhashable_like_list(self) -> None:
        with self.assertRaises(TypeError):
            hash(MessageSet())

    def test_repr(self) -> None:
        self.assertEqual(
            repr(MessageSet([Message(0, 0, None, b"v")], CODEC_ZSTD)),
            "MessageSet([Message(magic=0, attributes=0, key=None, value=b'v')], codec=4)",
        )

    def test_codec_validated(self) -> None:
        with self.assertRaises(UnsupportedCodecError):
            MessageSet([], 9)
