"""``send_records``' runs per partition: the reference, and its compiled twin against it."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st
from twisted.trial.unittest import SkipTest, SynchronousTestCase

from afkak.producer._record_runs import _record_runs, record_sizes
from afkak.records.batch import compiled_records
from afkak.test.helpers import property_examples

_crecords = compiled_records()

_blobs = st.one_of(st.none(), st.binary(max_size=40), st.binary(max_size=9).map(bytearray))
_headers = st.one_of(
    st.just(()),
    st.lists(st.tuples(st.text(max_size=4), st.one_of(st.none(), st.binary(max_size=6)))).map(
        tuple
    ),
)


@st.composite
def calls(draw: Any) -> tuple[Any, ...]:
    """A ``send_records`` call's columns as the accumulator has them, and a limit."""
    n = draw(st.integers(1, 40))
    count = draw(st.integers(1, 6))

    def column(items: Any, optional: bool = True) -> Any:
        if optional and draw(st.booleans()):
            return None
        return draw(st.lists(items, min_size=n, max_size=n))

    return (
        column(st.integers(0, count - 1), optional=False),
        column(_blobs),
        column(_blobs, optional=False),
        column(_headers),
        column(st.one_of(st.none(), st.integers(0, 2**62))),
        draw(st.integers(0, 2**45)),
        draw(st.integers(1, 150)),
    )


class ReferenceTests(SynchronousTestCase):
    """What ``_record_runs`` promises."""

    @settings(max_examples=property_examples(200))
    @given(calls())
    def test_each_partitions_records_in_order_in_runs_within_the_limit(
        self, call: tuple[Any, ...]
    ) -> None:
        partitions, keys, values, headers, stamps, default, limit = call
        sizes = record_sizes(keys, values, headers)
        total, largest, runs = _record_runs(*call)
        self.assertEqual((total, largest), (sum(sizes), max(sizes)))
        rows: dict[int, list[int]] = {}
        for i, p in enumerate(partitions):
            rows.setdefault(p, []).append(i)
        # partitions in the order they first appear, each one's runs consecutive
        seen = [p for i, (p, *_) in enumerate(runs) if i == 0 or runs[i - 1][0] != p]
        self.assertEqual(seen, list(rows))
        for p, indexes in rows.items():
            mine = [run for run in runs if run[0] == p]
            got_values = [v for run in mine for v in run[2]]
            self.assertEqual(got_values, [values[i] for i in indexes])
            if keys is not None:
                self.assertEqual([k for run in mine for k in run[1]], [keys[i] for i in indexes])
            if headers is not None:
                self.assertEqual([h for run in mine for h in run[3]], [headers[i] for i in indexes])
            expected_stamps = [
                default if stamps is None or stamps[i] is None else stamps[i] for i in indexes
            ]
            self.assertEqual([t for run in mine for t in run[4]], expected_stamps)
            at, previous = 0, None
            for _, _, run_values, _, _, size in mine:
                run = indexes[at : at + len(run_values)]
                self.assertEqual(size, sum(sizes[i] for i in run))
                self.assertTrue(size <= limit or len(run) == 1, (size, limit))
                if previous is not None:  # cut only where the next record did not fit
                    self.assertGreater(previous + sizes[run[0]], limit)
                at, previous = at + len(run), size

    def test_sizes_count_keys_values_and_headers(self) -> None:
        self.assertEqual(
            record_sizes([b"kk", None], [b"vvv", None], [(("h\u00e9", b"xy"), ("a", None)), ()]),
            [10 + 2 + 3 + (2 + 2 + 3) + (1 + 0 + 3), 10],
        )


class CompiledTests(SynchronousTestCase):
    """``_crecords.record_runs`` returns what the reference returns."""

    def setUp(self) -> None:
        if _crecords is None:
            raise SkipTest("the compiled record codec is not built")

    @settings(max_examples=property_examples(500))
    @given(calls())
    def test_matches_the_reference(self, call: tuple[Any, ...]) -> None:
        self.assertEqual(_crecords.record_runs(*call), _record_runs(*call))

    def test_tuples_and_other_sequences_as_the_reference(self) -> None:
        call = ((0, 1, 0), (b"a", None, b"c"), (b"x", b"y", b"z"), None, (None, 5, None), 9, 20)
        self.assertEqual(_crecords.record_runs(*call), _record_runs(*call))

    def test_refuses_what_does_not_fit(self) -> None:
        with self.assertRaises(ValueError):
            _crecords.record_runs([0], None, [], None, None, 0, 10)
        with self.assertRaises(ValueError):
            _crecords.record_runs([0], [b"k", b"l"], [b"v"], None, None, 0, 10)
        with self.assertRaises(TypeError):
            _crecords.record_runs([0], None, [5], None, None, 0, 10)
