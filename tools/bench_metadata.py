"""CPU of a Metadata refresh of 1,000 partitions without a broker: decode, parse, merge.

One Metadata v13 response as Apache Kafka 4.4 answers for bench_scale.py's
topology (100 topics of 10 partitions, one node, replicas ``[1]``) is
encoded once; then, best of --runs each: its read as the client reads it
(``MetadataCall.decode_frame``, :mod:`afkak.protocol.metadata_answer`) the
first time and again (the topics' entries unchanged since the last answer),
the client's parse of that, the general decoder (``MetadataResponse.decode``,
what answers of other shapes take) and the parse of its response, the merge
into a warm ``MetadataCache`` of a fresh parse each time (what a periodic
refresh of an unchanged cluster does), and read, parse and merge in a row.
Best-of and process CPU make it usable on a shared machine; to compare two
checkouts, run it from each in turn.  --profile prints where 10 refreshes go.

    PYTHONPATH=. python tools/bench_metadata.py [--runs N] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from collections.abc import Callable
from uuid import UUID

from afkak.client._metadata import MetadataCache
from afkak.client._metadata_call import MetadataCall
from afkak.protocol.messages import MetadataResponse as R
from afkak.protocol.metadata_answer import TopicMemo

TOPICS = 100
PARTITIONS = 10
VERSION = 13
NAMES = [f"bench-scale-topic-{t:03d}" for t in range(TOPICS)]


def response_bytes() -> bytes:
    topics = [
        R.MetadataResponseTopic(
            name=name,
            topic_id=UUID(int=t + 1),
            partitions=[
                R.MetadataResponsePartition(0, p, 1, 0, [1], [1], []) for p in range(PARTITIONS)
            ],
        )
        for t, name in enumerate(NAMES)
    ]
    broker = R.MetadataResponseBroker(1, "127.0.0.1", 9092, None)
    response = R(brokers=[broker], cluster_id="x" * 22, controller_id=1, topics=topics)
    return response.encode(VERSION)


def best_us(step: Callable[[], object], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        began = time.process_time()
        step()
        best = min(best, time.process_time() - began)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    data = response_bytes()
    frame = b"\x00\x00\x00\x01\x00" + data  # correlation id, no tagged fields
    call = MetadataCall(NAMES, TopicMemo())
    call(VERSION)
    first = MetadataCall(NAMES)  # without the earlier answers
    first(VERSION)
    cache = MetadataCache()
    cache.merge(call.parse(call.decode_frame(frame))[0])
    answer = call.decode_frame(frame)
    response = R.decode(data, VERSION)

    def refresh() -> None:
        cache.merge(call.parse(call.decode_frame(frame))[0])

    snapshots = iter([call.parse(answer)[0] for _ in range(args.runs)])
    read = best_us(lambda: first.decode_frame(frame), args.runs)
    again = best_us(lambda: call.decode_frame(frame), args.runs)
    parse = best_us(lambda: call.parse(answer), args.runs)
    decode = best_us(lambda: R.decode(data, VERSION), args.runs)
    parse_decoded = best_us(lambda: call.parse(response), args.runs)
    merge = best_us(lambda: cache.merge(next(snapshots)), args.runs)
    whole = best_us(refresh, args.runs)
    print(
        f"{TOPICS * PARTITIONS} partitions, {len(data)} B: read {read:.0f} us "
        f"(again {again:.0f} us), "
        f"parse {parse:.0f} us (general decoder {decode:.0f} us, parse {parse_decoded:.0f} us), "
        f"merge {merge:.0f} us, read, parse and merge {whole:.0f} us (best of {args.runs})"
    )
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(10):
            refresh()
        profile.disable()
        stats = pstats.Stats(profile)
        print(f"{stats.total_calls / 10:.0f} calls a refresh")  # type: ignore[attr-defined]
        stats.sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
