"""The work queue's bodies, pinned byte for byte per kind: parsed, the kind is a `MessageKind`, and
the body written again is the same bytes (the dispatcher routes on the kind by an exhaustive match)."""

from __future__ import annotations

from typing import Final

import pytest

from clockless.fanout.messages import MessageKind, RetiredMessageError, UnreadableMessageError, WorkMessage

PARTITIONS: Final = ("0", "1")
BODIES: Final = {
    MessageKind.PARTITION: (
        '{"hop":2,"job":"toy","kind":"partition","params":{"d":"2026-12-01"},"partition":"1",'
        '"scheduled_time":"2026-12-01T02:00:00Z","trigger":"schedule","version":1}'
    ),
    MessageKind.ITEMS: (
        '{"error":"boom","items":[{"id":"a"}],"job":"toy","keys":["a"],"kind":"items","params":{},'
        '"partition":"0","scheduled_time":"2026-12-01T02:00:00Z","trigger":"schedule","version":1}'
    ),
    MessageKind.START: (
        # as the kit writes a start (clockless.fanout.buffer): with an empty error and items
        '{"error":"","items":[],"job":"toy","kind":"start","params":{"after":"2026-12-01T01:00:00Z"},"partition":"",'
        '"scheduled_time":"2026-12-01T02:00:00Z","trigger":"schedule","version":1}'
    ),
}
# A watch over a late receive, as the release before the tick reaper wrote it (still queued at a deploy).
RETIRED_WATCH: Final = (
    '{"hop":0,"job":"toy","kind":"watch","message_id":"m-1","params":{},"partition":"0","receives":5,'
    '"scheduled_time":"2026-12-01T02:00:00Z","seen_owner":"run-4","trigger":"schedule","until_ms":99,'
    '"watched":"run-5"}'
)


def test_every_kind_has_a_pinned_body() -> None:
    assert set(BODIES) == set(MessageKind)


@pytest.mark.parametrize("kind", list(MessageKind))
def test_a_body_parses_to_its_kind_and_is_written_again_byte_for_byte(kind: MessageKind) -> None:
    message = WorkMessage.parse(BODIES[kind], job="toy", partitions=PARTITIONS)

    assert message.kind is kind
    assert message.body() == BODIES[kind]


def test_a_watch_an_earlier_release_sent_is_a_retired_kind_not_a_malformed_message() -> None:
    with pytest.raises(RetiredMessageError) as raised:
        WorkMessage.parse(RETIRED_WATCH, job="toy", partitions=PARTITIONS)

    assert raised.value.kind == "watch"
    assert "a kind an earlier release sent" in str(raised.value)


def test_a_body_queued_before_versions_reads_as_version_1() -> None:
    old = BODIES[MessageKind.PARTITION].replace(',"version":1', "")

    message = WorkMessage.parse(old, job="toy", partitions=PARTITIONS)

    assert message.version == 1
    assert message.body() == BODIES[MessageKind.PARTITION]


def test_a_body_of_an_unknown_version_is_refused_naming_its_tick() -> None:
    newer = BODIES[MessageKind.PARTITION].replace('"version":1', '"version":2')

    with pytest.raises(UnreadableMessageError, match="field 'version' is 2, which this worker cannot read") as caught:
        WorkMessage.parse(newer, job="toy", partitions=PARTITIONS)

    assert (caught.value.envelope.job, caught.value.envelope.partition) == ("toy", "1")
    assert WorkMessage.parse(newer, job="toy", partitions=PARTITIONS, versions={1, 2}).version == 2


def test_a_partition_beyond_this_workers_count_is_unreadable_not_dropped() -> None:
    beyond = BODIES[MessageKind.PARTITION].replace('"partition":"1"', '"partition":"7"')

    with pytest.raises(UnreadableMessageError, match="field 'partition' must be one of this job's 2 partitions"):
        WorkMessage.parse(beyond, job="toy", partitions=PARTITIONS)
