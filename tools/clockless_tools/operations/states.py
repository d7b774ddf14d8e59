"""`clockless work states`: the fan-out's state machine as docs/fan-out.md shows it, generated from
`clockless.state` (its states, and the conditional write that moves each)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from clockless.state import TRANSITIONS, PartitionPhase, Record, TickPhase, Transition

# Where a tick's entry comes from: the coordinator's claim, the ledger's write (clockless.ledger).
CLAIM_EDGE = "    ABSENT --> STARTED: claimed by its coordinator (clockless.ledger)"


def changes(transition: Transition) -> list[tuple[str, str]]:
    """The state changes a transition makes: none when it leaves each state as it is."""
    if transition.sources == transition.targets:
        return []
    return [
        (source.name, target.name)
        for source in transition.sources
        for target in transition.targets
        if source is not target
    ]


def _diagram(
    title: str, phases: Iterable[PartitionPhase | TickPhase], transitions: Sequence[Transition], extra: Sequence[str]
) -> list[str]:
    """One Mermaid state diagram: each state by its member name, labelled with its value; the
    transitions between the same two states on one arrow."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for transition in transitions:
        for edge in changes(transition):
            edges[edge].append(transition.name)
    lines = [f"**{title}**", "", "```mermaid", "stateDiagram-v2", "    direction LR"]
    lines += [f'    state "{phase.value}" as {phase.name}' for phase in phases]
    lines += ["    [*] --> ABSENT", *extra]
    lines += [f"    {source} --> {target}: {', '.join(names)}" for (source, target), names in edges.items()]
    lines += ["```", ""]
    return lines


def _table(transitions: Iterable[Transition]) -> list[str]:
    lines = ["| transition | record | from | to | condition | why |", "| --- | --- | --- | --- | --- | --- |"]
    for t in transitions:
        sources = " / ".join(phase.value for phase in t.sources)
        targets = "unchanged" if t.sources == t.targets else " / ".join(phase.value for phase in t.targets)
        condition = "— (in a transaction with conditional writes)" if t.condition is None else f"`{t.condition}`"
        lines.append(f"| `{t.name}` | {t.record.value} | {sources} | {targets} | {condition} | {t.why} |")
    return lines


def states_markdown() -> str:
    """The partition's and the tick's state diagrams (the changes only), then every transition with
    its condition."""
    partition = [t for t in TRANSITIONS if t.record is not Record.TICK]
    tick = [t for t in TRANSITIONS if t.record is Record.TICK]
    lines = _diagram("A partition (its record, and its name on the tick entry)", PartitionPhase, partition, [])
    lines += _diagram("A tick (its ledger entry)", TickPhase, tick, [CLAIM_EDGE])
    lines += _table(TRANSITIONS)
    return "\n".join(lines)
