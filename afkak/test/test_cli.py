"""afkak.cli without a broker: argument and properties parsing, format strings, error
lines and exit codes, and the admin commands against the fake cluster."""

from __future__ import annotations

import io
import json
import os
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

import afkak
import afkak.cli
from afkak.cli import _admin_commands as admin
from afkak.cli._config import ConfigError, bootstrap, client_options, read_properties
from afkak.cli._consume import parse_offset
from afkak.cli._format import (
    compile_format,
    console_consumer_format,
    console_producer_separator,
    record_json,
)
from afkak.cli._output import (
    FAILED,
    NOT_FOUND,
    UNREACHABLE,
    USAGE,
    CommandError,
    Output,
    error_of,
)
from afkak.cli._parser import build_parser
from afkak.cli._session import Session
from afkak.common import (
    KafkaUnavailableError,
    Message,
    NotController,
    SourcedMessage,
    TopicAndPartition,
    UnknownTopicOrPartitionError,
)
from afkak.protocol.messages import ConsumerGroupHeartbeatRequest
from afkak.test.test_admin import on_fake_cluster

TP = TopicAndPartition


def properties(text: str) -> dict[str, str]:
    with tempfile.NamedTemporaryFile("w", suffix=".properties", delete=False) as f:
        f.write(text)
    try:
        return read_properties(f.name)
    finally:
        os.unlink(f.name)


class PropertiesTests(SynchronousTestCase):
    def test_java_properties_syntax(self) -> None:
        got = properties(
            "# comment\n! another\n\nclient.id = cli\nsecurity.protocol:SASL_SSL\n"
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule \\\n"
            '   required username="alice" password="s3cret";\n'
        )
        self.assertEqual(got["client.id"], "cli")
        self.assertEqual(got["security.protocol"], "SASL_SSL")
        self.assertIn('username="alice"', got["sasl.jaas.config"])

    def test_malformed_line_names_file_and_line(self) -> None:
        with self.assertRaises(ConfigError) as e:
            properties("client.id=x\nnot-a-pair\n")
        self.assertIn(":2:", str(e.exception))

    def test_plaintext_options(self) -> None:
        self.assertEqual(
            client_options({"client.id": "me", "request.timeout.ms": "5000"}),
            {"clientId": "me", "timeout": 5000},
        )

    def test_unknown_and_misplaced_keys_are_refused(self) -> None:
        for props in (
            {"bogus.key": "1"},
            {"security.protocol": "BOGUS"},
            {"sasl.mechanism": "PLAIN"},  # sasl.* without a SASL protocol
            {"ssl.ca.location": "/x"},  # ssl.* without SSL
            {"request.timeout.ms": "soon"},
        ):
            with self.assertRaises(ConfigError, msg=props):
                client_options(props)

    def test_security_options_map_to_the_client(self) -> None:
        """SASL/TLS properties become the KafkaClient's tls/sasl options when it has them."""
        ca = self.mktemp()
        with open(ca, "w") as f:
            f.write("not checked until a connection is made\n")
        props = {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": 'x required username="alice" password="pw";',
            "ssl.ca.location": ca,
        }
        if not hasattr(afkak, "TLS"):
            with self.assertRaises(ConfigError) as e:
                client_options(props)
            self.assertIn("no TLS support", str(e.exception))
            return
        options = client_options(props)
        self.assertEqual(options["tls"].trust_root, ca)
        self.assertEqual(options["sasl"].username, "alice")

    def config_error(self, text: str | bytes) -> str:
        """The one-line error for a --command-config file holding *text*."""
        path = self.mktemp()
        with open(path, "wb") as f:
            f.write(text.encode() if isinstance(text, str) else text)
        with self.assertRaises(ConfigError) as e:
            client_options(read_properties(path))
        message = str(e.exception)
        self.assertTrue(message.startswith(path + ":"), message)
        return message[len(path) :]

    def test_bootstrap_servers_is_read(self) -> None:
        """The first line of most Kafka client.properties files (issue 26)."""
        options = client_options(properties("bootstrap.servers=k1:9092,k2:9092\n"))
        self.assertEqual(options, {"hosts": "k1:9092,k2:9092"})

    def test_unknown_key_names_file_and_line(self) -> None:
        self.assertEqual(
            self.config_error("client.id=x\n\nthis is garbage\n"),
            ":3: unsupported property 'this'",
        )

    def test_librdkafka_spellings_get_did_you_mean(self) -> None:
        message = self.config_error(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanisms=PLAIN\nsasl.username=u\n"
        )
        self.assertEqual(
            message, ":2: unsupported property 'sasl.mechanisms' (did you mean sasl.mechanism?)"
        )
        self.assertIn(
            "did you mean bootstrap.servers?", self.config_error("metadata.broker.list=h\n")
        )
        self.assertIn("did you mean client.id?", self.config_error("client.idd=h\n"))

    def test_non_utf8_names_file_and_line(self) -> None:
        self.assertEqual(
            self.config_error(b"client.id=x\nsasl.password=caf\xe9\n"),
            ":2: not UTF-8 text (byte 0xe9)",
        )

    def test_value_errors_name_the_line(self) -> None:
        self.assertTrue(
            self.config_error("client.id=x\nrequest.timeout.ms=soon\n").startswith(
                ":2: request.timeout.ms must be an integer"
            )
        )
        self.assertTrue(
            self.config_error(
                "security.protocol=SSL\nssl.ca.location=/nonexistent/ca.pem\n"
            ).startswith(":2: trust_root (the CA file) /nonexistent/ca.pem does not exist")
        )

    def test_bootstrap_from_environment(self) -> None:
        self.patch(os, "environ", {"AFKAK_BOOTSTRAP": "h:1"})
        self.assertEqual(bootstrap(None), "h:1")
        self.assertEqual(bootstrap("g:2"), "g:2")
        self.patch(os, "environ", {})
        with self.assertRaises(ConfigError):
            bootstrap(None)


class FormatTests(SynchronousTestCase):
    message = SourcedMessage(
        "t", 2, 41, Message(0, 0, b"k", b"v\xff", headers=(("h", b"1"), ("n", None)))
    )

    def test_tokens(self) -> None:
        render = compile_format("%t/%p@%o %k=%s (%K,%S) [%h] 100%%\\t|\\n")
        self.assertEqual(render(self.message), b"t/2@41 k=v\xff (1,2) [h=1,n=] 100%\t|\n")

    def test_null_key_length(self) -> None:
        m = SourcedMessage("t", 0, 0, Message(0, 0, None, b"v"))
        self.assertEqual(compile_format("%K %k|%s")(m), b"-1 |v")

    def test_bad_tokens(self) -> None:
        for fmt in ("%x", "abc%", "\\q"):
            with self.assertRaises(ValueError, msg=fmt):
                compile_format(fmt)

    def test_json(self) -> None:
        data = record_json(self.message)
        self.assertEqual((data["key"], data["value"]), ("k", "v\ufffd"))
        self.assertEqual(data["headers"], [["h", "1"], ["n", None]])
        json.dumps(data)

    def test_offsets(self) -> None:
        self.assertEqual(parse_offset("beginning"), ("beginning", 0))
        self.assertEqual(parse_offset("earliest"), ("beginning", 0))
        self.assertEqual(parse_offset("latest"), ("end", 0))
        self.assertEqual(parse_offset("12"), ("offset", 12))
        self.assertEqual(parse_offset("-5"), ("from_end", 5))
        self.assertEqual(parse_offset("s@1700000000000"), ("timestamp", 1700000000000))
        with self.assertRaises(ValueError):
            parse_offset("soon")


class OutputTests(SynchronousTestCase):
    def test_exit_codes(self) -> None:
        self.assertEqual(error_of(KafkaUnavailableError("down")).code, UNREACHABLE)
        self.assertEqual(error_of(UnknownTopicOrPartitionError()).code, NOT_FOUND)
        self.assertEqual(error_of(NotController()).code, FAILED)
        self.assertEqual(error_of(ValueError("bad")).code, USAGE)
        self.assertEqual(error_of(CommandError("x", 7)).code, 7)

    def test_errors_are_one_line(self) -> None:
        self.assertEqual(str(error_of(RuntimeError("a\nb\n  c"))), "RuntimeError: a b c")
        self.assertLessEqual(len(str(error_of(ValueError("x" * 1000)))), 300)

    def test_table_and_json(self) -> None:
        stream = io.StringIO()
        Output(False, stream).table(["a", "bb"], [(1, None), ("long", [1, 2])])
        self.assertEqual(stream.getvalue(), "a     bb\n1     -\nlong  1,2\n")
        stream = io.StringIO()
        Output(True, stream).table(["a"], [(1,)])
        self.assertEqual(json.loads(stream.getvalue()), [{"a": 1}])


class AdminCommandTests(SynchronousTestCase):
    """The admin commands on the fake cluster (produce/consume run end to end on Tansu)."""

    def setUp(self) -> None:
        self.clock, self.cluster, self.client = on_fake_cluster(self)

    def run_command(self, *argv: str) -> tuple[int, Any]:
        args = build_parser().parse_args(["--json", *argv])
        session = Session(args, self.clock, self.client)
        session.out = Output(True, io.StringIO())
        d = args.run(session)
        from twisted.internet.defer import Deferred

        result = self.successResultOf(Deferred.fromCoroutine(d))
        text = session.out.stream.getvalue()
        return result, [json.loads(line) for line in text.splitlines()]

    def fail_command(self, *argv: str) -> CommandError:
        args = build_parser().parse_args(argv)
        from twisted.internet.defer import Deferred

        d = Deferred.fromCoroutine(args.run(Session(args, self.clock, self.client)))
        return error_of(self.failureResultOf(d).value)

    def test_topics(self) -> None:
        code, out = self.run_command(
            "topics", "create", "t", "-p", "2", "-r", "2", "--config", "retention.ms=5"
        )
        self.assertEqual((code, out), (0, [{"topic": "t", "created": True}]))
        self.assertEqual(self.cluster.state.topics["t"].configs, {"retention.ms": "5"})
        self.assertEqual(self.fail_command("topics", "create", "t").code, FAILED)
        code, out = self.run_command("topics", "create", "t", "--if-not-exists")
        self.assertEqual(out, [{"topic": "t", "created": False}])
        _, [listed] = self.run_command("topics", "list")
        self.assertEqual([t["name"] for t in listed], ["t"])
        _, [[described]] = self.run_command("topics", "describe", "t", "--configs")
        self.assertEqual([p["replicas"] for p in described["partitions"]], [[0, 1], [1, 2]])
        self.assertEqual([p["elr"] for p in described["partitions"]], [[], []])  # KIP-966
        self.assertEqual(described["configs"]["retention.ms"], "5")
        self.run_command("topics", "alter-config", "t", "--set", "retention.ms=9")
        self.assertEqual(self.cluster.state.topics["t"].configs, {"retention.ms": "9"})
        error = self.fail_command("topics", "alter-config", "t", "--set", "no.such=1")
        self.assertEqual(error.code, FAILED)
        self.assertEqual(self.fail_command("topics", "describe", "nope").code, NOT_FOUND)
        self.run_command("topics", "delete", "t")
        self.assertEqual(self.cluster.state.topics, {})

    def test_cluster(self) -> None:
        _, [c] = self.run_command("cluster")
        self.assertEqual(
            (c["cluster_id"], c["controller"], len(c["brokers"])), ("afkak-fake-cluster", 0, 3)
        )

    def test_groups(self) -> None:
        self.cluster.create_topic("t", 2, 1)
        self.cluster.append("t", 0, [b"a", b"b", b"c"])
        self.cluster.commit("g", "t", 0, 1)
        _, [groups] = self.run_command("groups", "list")
        self.assertEqual([g["group"] for g in groups], ["g"])
        _, [lag] = self.run_command("groups", "lag", "g")
        self.assertEqual(
            lag, [{"topic": "t", "partition": 0, "committed": 1, "log_end": 3, "lag": 2}]
        )
        _, [plan] = self.run_command("groups", "reset-offsets", "g", "--topic", "t", "--to-latest")
        self.assertEqual([(r["current"], r["new"]) for r in plan], [(1, 3), (-1, 0)])
        self.assertEqual(self.cluster.committed_offsets[("g", "t", 0)].offset, 1)  # dry run
        self.run_command(
            "groups", "reset-offsets", "g", "--topic", "t:0", "--shift-by", "1", "--execute"
        )
        self.assertEqual(self.cluster.committed_offsets[("g", "t", 0)].offset, 2)
        self.run_command("groups", "delete", "g")
        self.assertEqual(self.cluster.committed_offsets, {})
        self.assertEqual(self.fail_command("groups", "delete", "g").code, NOT_FOUND)

    def test_lag_of_an_unknown_group_or_topic_exits_4(self) -> None:
        """A typo must not read as "no lag" (issue 36: exit 0 and an empty table)."""
        self.cluster.create_topic("t", 1, 1)
        self.cluster.commit("g", "t", 0, 0)
        for argv, message in (
            (["nog"], "group nog: unknown"),
            (["nog", "--topic", "t"], "group nog: unknown"),
            (["g", "--topic", "nosuch"], "topic nosuch: "),
            (["g", "--topic", "t", "--topic", "nosuch"], "topic nosuch: "),
        ):
            with self.subTest(argv=argv):
                error = self.fail_command("groups", "lag", *argv)
                self.assertEqual(error.code, NOT_FOUND)
                self.assertTrue(str(error).startswith(message), str(error))
        _, [lag] = self.run_command("groups", "lag", "g", "--topic", "t")
        self.assertEqual([row["committed"] for row in lag], [0])

    def test_groups_describe_shows_both_protocols(self) -> None:
        """A KIP-848 group with epochs and target assignments, a classic one without."""
        self.cluster.create_topic("t", 2, 1)
        self.cluster.commit("classic", "t", 0, 1)
        R = ConsumerGroupHeartbeatRequest
        join = R("g", "m1", 0, rebalance_timeout_ms=1000, subscribed_topic_names=["t"])
        coordinator = self.cluster.state.consumer_groups
        coordinator.heartbeat(join, self.cluster.state.coordinator("g"), "c1")
        _, [rows] = self.run_command("groups", "describe", "g", "classic")
        self.assertEqual(
            rows,
            [
                {
                    "group": "g",
                    "type": "consumer",
                    "state": "Stable",
                    "assignor": "uniform",
                    "group_epoch": 1,
                    "member": "m1",
                    "member_epoch": 1,
                    "client_id": "c1",
                    "host": "/127.0.0.1",
                    "partitions": ["t:0", "t:1"],
                    "target": ["t:0", "t:1"],
                },
                {
                    "group": "classic",
                    "type": "classic",
                    "state": "Empty",
                    "assignor": "",
                    "group_epoch": None,
                    "member": None,
                    "member_epoch": None,
                    "client_id": None,
                    "host": None,
                    "partitions": None,
                    "target": None,
                },
            ],
        )

    def test_bad_arguments(self) -> None:
        with self.assertRaises(ValueError):
            admin.key_values(["novalue"], "--set")
        with self.assertRaises(ValueError):
            admin.partitions_arg(["t:x"])
        self.assertEqual(admin.partitions_arg(["t", "u:1,2"]), ["t", TP("u", 1), TP("u", 2)])
        self.assertEqual(admin._timestamp("2026-01-01T00:00:00Z"), 1767225600000)
        with self.assertRaises(SystemExit):
            build_parser().parse_args(["groups", "reset-offsets", "g", "--topic", "t"])


class GlobalOptionTests(SynchronousTestCase):
    """The global options may follow the command (issue 26: they were refused there)."""

    def test_anywhere(self) -> None:
        for argv in (
            ["-b", "h:1", "--json", "--timeout", "3", "topics", "list"],
            ["topics", "list", "-b", "h:1", "--json", "--timeout", "3"],
            ["topics", "-b", "h:1", "list", "--json", "--timeout", "3"],
            ["--json", "groups", "lag", "g", "--bootstrap", "h:1", "--timeout=3"],
        ):
            with self.subTest(argv=argv):
                args = build_parser().parse_args(argv)
                self.assertEqual((args.bootstrap, args.json, args.timeout), ("h:1", True, 3.0))

    def test_defaults_and_no_reset_after_the_command(self) -> None:
        args = build_parser().parse_args(["topics", "list"])
        self.assertEqual(
            (args.bootstrap, args.json, args.timeout, args.no_progress, args.command_config),
            (None, False, 10.0, False, None),
        )
        args = build_parser().parse_args(["--command-config", "f", "cluster"])
        self.assertEqual(args.command_config, "f")


def usage_error(argv: list[str]) -> str:
    """The one line argparse writes for *argv* (exit 2)."""
    err = io.StringIO()
    with redirect_stderr(err), SynchronousTestCase().assertRaises(SystemExit) as exited:
        build_parser().parse_args(argv)
    assert exited.exception.code == USAGE, exited.exception.code
    return err.getvalue()


class KafkaToolSpellingTests(SynchronousTestCase):
    """Kafka's shell tools' and kcat's spellings, for users who arrive with them (issue 36)."""

    def test_parsed_as_the_afkak_spellings(self) -> None:
        for argv, expected in (
            (["--bootstrap-server", "h:1", "topics", "list"], {"bootstrap": "h:1"}),
            (["topics", "list", "--bootstrap-server=h:1"], {"bootstrap": "h:1"}),
            (
                ["consume", "--topic", "t", "--from-beginning", "--group", "g"],
                {"topic": "t", "offset": "beginning", "group": "g"},
            ),
            (["consume", "t"], {"topic": "t", "offset": "end"}),
            (["produce", "--topic", "t"], {"topic": "t"}),
        ):
            with self.subTest(argv=argv):
                args = build_parser().parse_args(argv)
                self.assertEqual({k: getattr(args, k) for k in expected}, expected)

    def test_a_missing_topic_is_a_usage_error(self) -> None:
        for command in ("produce", "consume"):
            with self.subTest(command=command):
                err = io.StringIO()
                with redirect_stderr(err):
                    code = afkak.cli.main([command, "-b", "h:1"])
                self.assertEqual(code, USAGE)
                self.assertIn(f"{command} needs a TOPIC (or --topic TOPIC)", err.getvalue())

    def test_console_consumer_properties(self) -> None:
        m = FormatTests.message
        for properties, line in (
            (["print.key=true"], b"k\tv\xff\n"),
            (["print.key=true", "key.separator=%:"], b"k%:v\xff\n"),
            (["print.offset=true", "print.partition=true"], b"Partition:2\tOffset:41\tv\xff\n"),
            (["print.value=false", "print.key=true"], b"k\n"),
        ):
            with self.subTest(properties=properties):
                fmt = console_consumer_format(properties)
                assert fmt is not None
                self.assertEqual(compile_format(fmt)(m), line)
        self.assertIsNone(console_consumer_format([]))
        with self.assertRaises(ValueError):
            console_consumer_format(["print.headerz=true"])

    def test_console_producer_properties(self) -> None:
        for properties, separator in (
            ([], None),
            (["parse.key=true"], "\t"),
            (["parse.key=true", "key.separator=:"], ":"),
            (["parse.key=false", "key.separator=:"], None),
        ):
            with self.subTest(properties=properties):
                self.assertEqual(console_producer_separator(properties), separator)
        with self.assertRaises(ValueError):
            console_producer_separator(["print.key=true"])

    def test_kcat_modes_name_the_afkak_command(self) -> None:
        for argv, says in (
            (["-C", "-t", "t"], "-C is kcat's; afkak says afkak consume TOPIC"),
            (["-P", "-t", "t"], "-P is kcat's; afkak says afkak produce TOPIC"),
            (["-L"], "-L is kcat's; afkak says afkak topics describe TOPIC"),
        ):
            with self.subTest(argv=argv):
                self.assertIn(says, usage_error(argv))


class UsageTextTests(SynchronousTestCase):
    """What ``--help`` and usage errors say (issue 36)."""

    def test_bad_numbers_are_named_without_internal_names(self) -> None:
        for argv, says in (
            (["topics", "create", "t", "-p", "abc"], "must be an integer, not 'abc'"),
            (["topics", "create", "t", "-p", "0"], "must be at least 1, not 0"),
            (["consume", "t", "-p", "x"], "must be an integer, not 'x'"),
            (["produce", "t", "--rate", "fast"], "must be a number, not 'fast'"),
            (["broker", "--port", "http"], "must be an integer, not 'http'"),
        ):
            with self.subTest(argv=argv):
                line = usage_error(argv)
                self.assertIn(says, line)
                self.assertNotIn("_positive", line)
                self.assertNotIn("invalid", line)

    def help_of(self, *argv: str) -> str:
        out = io.StringIO()
        with redirect_stdout(out), self.assertRaises(SystemExit):
            build_parser().parse_args([*argv, "--help"])
        return out.getvalue()

    def test_topics_create_options_have_help(self) -> None:
        text = " ".join(self.help_of("topics", "create").split())
        for described in (
            "--partitions PARTITIONS how many partitions",
            "--replication-factor REPLICATION_FACTOR copies of each partition",
            "--config NAME=VALUE a topic config",
            "--validate-only only ask the broker to check",
            "--if-not-exists an existing topic is no error",
        ):
            with self.subTest(described=described):
                self.assertIn(described, text)

    def test_broker_lists_only_its_options(self) -> None:
        text = self.help_of("broker")
        self.assertIn("--port", text)
        for option in ("--bootstrap", "--json", "--command-config", "--timeout"):
            self.assertNotIn(option, text)
