from twisted.internet import defer, task

from afkak import ConsumerGroup, KafkaClient, Producer
from afkak.common import OFFSET_EARLIEST


async def main(reactor):
    client = KafkaClient("127.0.0.1:9092", reactor=reactor)

    print("writing a record to topic greetings...")
    producer = Producer(client)
    written = await producer.send("greetings", b"hello, kafka", key=b"me")
    print(f"written to {written.topic}/{written.partition} at offset {written.offset}")
    await producer.stop()

    received = defer.Deferred()

    def processor(consumer, messages):
        for m in messages:
            print(f"read {m.message.value!r} at offset {m.offset}")
        if not received.called:
            received.callback(None)

    print("joining consumer group greeters (the broker gathers members for a few seconds)...")
    group = ConsumerGroup(
        client,
        "greeters",
        ["greetings"],
        processor,
        auto_offset_reset=OFFSET_EARLIEST,
        session_timeout_ms=6000,  # short: a development broker holds each join this long / 2
    )
    group.start()
    await received
    await group.shutdown()  # commits the offsets read, leaves the group
    await client.close()


task.react(lambda reactor: defer.ensureDeferred(main(reactor)))
