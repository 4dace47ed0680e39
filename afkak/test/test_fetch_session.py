"""FetchSessionHandler: KIP-227 full and incremental requests, epochs, session errors."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from afkak.common import ErrorCode, TopicAndPartition
from afkak.consumer._fetch_session import FetchSessionHandler

A, B, C = (TopicAndPartition("t", p) for p in range(3))
SESSION = 77


class FetchSessionHandlerTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.handler = FetchSessionHandler()

    def granted(self) -> None:
        """A full fetch of A and B whose answer grants session 77."""
        sent = self.handler.build({A: (0, 100, 3), B: (5, 100, 3)})
        self.assertTrue(self.handler.handle_response(sent, 0, SESSION))

    def test_without_a_session_a_request_is_full_and_asks_for_one(self) -> None:
        sent = self.handler.build({A: (0, 100, 3), B: (5, 100, 3)})
        self.assertEqual(
            (sent.to_send, sent.forgotten, sent.unchanged, sent.session_id, sent.epoch),
            ([A, B], [], [], 0, 0),
        )

    def test_a_granted_session_holds_what_was_sent_and_moves_the_epoch_on(self) -> None:
        self.granted()
        self.assertEqual(
            (self.handler.session_id, self.handler.epoch, dict(self.handler.partitions)),
            (SESSION, 1, {A: (0, 100, 3), B: (5, 100, 3)}),
        )

    def test_a_new_leader_epoch_sends_the_partition_again(self) -> None:
        """KIP-320: a partition whose leader epoch moved is named, with its new epoch."""
        self.granted()
        sent = self.handler.build({A: (0, 100, 4), B: (5, 100, 3)})
        self.assertEqual((sent.to_send, sent.unchanged), ([A], [B]))

    def test_incremental_requests_name_what_moved_joined_or_left(self) -> None:
        self.granted()
        sent = self.handler.build({A: (10, 100, 3), C: (0, 100, 3)})  # A moved, B left, C joined
        self.assertEqual(
            (sent.to_send, sent.forgotten, sent.unchanged, sent.session_id, sent.epoch),
            ([A, C], [B], [], SESSION, 1),
        )
        self.assertTrue(self.handler.handle_response(sent, 0, SESSION))
        self.assertEqual(dict(self.handler.partitions), {A: (10, 100, 3), C: (0, 100, 3)})
        self.assertEqual(self.handler.epoch, 2)
        sent = self.handler.build({A: (10, 100, 3), C: (0, 100, 3)})
        self.assertEqual((sent.to_send, sent.forgotten, sent.unchanged), ([], [], [A, C]))

    def test_a_new_fetch_size_is_sent_again(self) -> None:
        self.granted()
        sent = self.handler.build({A: (0, 200, 3), B: (5, 100, 3)})
        self.assertEqual((sent.to_send, sent.unchanged), ([A], [B]))

    def test_session_errors_fall_back_to_a_full_fetch_asking_for_a_new_session(self) -> None:
        for error in (
            ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
            ErrorCode.INVALID_FETCH_SESSION_EPOCH,
            ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR,
        ):
            with self.subTest(error=error):
                self.granted()
                sent = self.handler.build({A: (0, 100, 3), B: (5, 100, 3)})
                self.assertFalse(self.handler.handle_response(sent, error, 0))
                full = self.handler.build({A: (0, 100, 3), B: (5, 100, 3)})
                self.assertEqual((full.to_send, full.session_id, full.epoch), ([A, B], 0, 0))

    def test_a_failed_request_ends_the_session(self) -> None:
        self.granted()
        self.handler.handle_error()
        sent = self.handler.build({A: (0, 100, 3)})
        self.assertEqual((sent.to_send, sent.session_id, sent.epoch), ([A], 0, 0))

    def test_no_session_granted_keeps_requests_full(self) -> None:
        sent = self.handler.build({A: (0, 100, 3)})
        self.assertTrue(self.handler.handle_response(sent, 0, 0))
        again = self.handler.build({A: (0, 100, 3)})
        self.assertEqual((again.to_send, again.session_id, again.epoch), ([A], 0, 0))

    def test_a_different_session_id_closes_the_session(self) -> None:
        self.granted()
        sent = self.handler.build({A: (0, 100, 3), B: (5, 100, 3)})
        self.assertTrue(self.handler.handle_response(sent, 0, SESSION + 1))
        self.assertEqual((self.handler.session_id, self.handler.epoch), (0, 0))

    def test_a_top_level_error_still_answers_with_the_session_kept(self) -> None:
        """Only the session errors void the answer; another error is the partitions'."""
        self.granted()
        sent = self.handler.build({A: (0, 100, 3), B: (5, 100, 3)})
        self.assertTrue(self.handler.handle_response(sent, ErrorCode.UNKNOWN_SERVER_ERROR, SESSION))
        self.assertEqual(self.handler.epoch, 2)

    def test_the_epoch_wraps_to_one_after_int32_max(self) -> None:
        self.granted()
        self.handler.epoch = 2**31 - 1
        sent = self.handler.build({A: (0, 100, 3), B: (5, 100, 3)})
        self.handler.handle_response(sent, 0, SESSION)
        self.assertEqual(self.handler.epoch, 1)
