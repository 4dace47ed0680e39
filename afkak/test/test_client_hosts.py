"""Parsing of KafkaClient's ``hosts`` argument (afkak.client._hosts)."""

from __future__ import annotations

from hypothesis import given, strategies as st
from twisted.trial.unittest import SynchronousTestCase

from afkak.client._hosts import DEFAULT_PORT, format_host_port, parse_hosts
from afkak.test.helpers import UTF8_CHARACTERS


class ParseHostsTests(SynchronousTestCase):
    def test_comma_separated_string(self) -> None:
        self.assertEqual(
            parse_hosts("kafka1:9093, kafka2 ,10.0.0.3:1234"),
            (("kafka1", 9093), ("kafka2", DEFAULT_PORT), ("10.0.0.3", 1234)),
        )

    def test_list_of_strings_and_tuples(self) -> None:
        self.assertEqual(
            parse_hosts(["a:1", ("b", 2), "c"]),
            (("a", 1), ("b", 2), ("c", 9092)),
        )

    def test_duplicates_are_dropped_keeping_order(self) -> None:
        self.assertEqual(parse_hosts("b:1,a:1,b:1,a"), (("b", 1), ("a", 1), ("a", 9092)))

    def test_ipv6_literals(self) -> None:
        self.assertEqual(
            parse_hosts("[::1]:9093,[fe80::2],::3"),
            (("::1", 9093), ("fe80::2", 9092), ("::3", 9092)),
        )
        self.assertEqual(parse_hosts([("::1", 1), ("[::2]", 2)]), (("::1", 1), ("::2", 2)))

    def test_protocol_prefixes_are_ignored_as_by_java(self) -> None:
        """Listener strings pasted from a broker's config (issue 36: "not an IPv6 address")."""
        self.assertEqual(
            parse_hosts("PLAINTEXT://a:9092, SSL://b:9093,SASL_SSL://[::1]:9094,c"),
            (("a", 9092), ("b", 9093), ("::1", 9094), ("c", 9092)),
        )

    def test_bad_types(self) -> None:
        for bad in (
            None,
            9092,
            b"host:1",
            [b"host"],
            [("h", "1")],
            [("h", 1.0)],
            [("h", True)],
            [(1, 2)],
            [("h",)],
        ):
            with self.subTest(hosts=bad):
                self.assertRaises(TypeError, parse_hosts, bad)

    def test_bad_values(self) -> None:
        for bad in (
            "",
            "a,,b",
            "a:",
            "a:x",
            "a:0",
            "a:65536",
            "a:-1",
            "[::1",
            "[::1]x",
            "[nothost]:1",
            "a b:1",
            "1:2:3:nothex",
            [],
            [("", 1)],
            [("h", 0)],
        ):
            with self.subTest(hosts=bad):
                self.assertRaises(ValueError, parse_hosts, bad)

    @given(
        st.lists(
            st.tuples(
                st.from_regex(r"[a-z][a-z0-9.-]{0,20}", fullmatch=True, alphabet=UTF8_CHARACTERS),
                st.integers(min_value=1, max_value=65535),
            ),
            min_size=1,
        )
    )
    def test_round_trip_through_string(self, pairs: list[tuple[str, int]]) -> None:
        text = ",".join(format_host_port(h, p) for h, p in pairs)
        self.assertEqual(parse_hosts(text), tuple(dict.fromkeys(pairs)))

    def test_format_brackets_ipv6(self) -> None:
        self.assertEqual(format_host_port("::1", 5), "[::1]:5")
        self.assertEqual(parse_hosts(format_host_port("::1", 5)), (("::1", 5),))
