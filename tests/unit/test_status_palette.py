"""The status page's palette stays apart for the common colour-vision deficiencies: each state's
colour simulated as a protanope, a deuteranope and a tritanope sees it (Machado, Oliveira and
Fernandes 2009, severity 1.0, applied in linear sRGB), and the pairwise distance in CIELAB
(CIE76 ΔE) checked; every cell's letter is readable on its colour (WCAG 2 contrast)."""

from __future__ import annotations

import itertools
import math

import pytest

from clockless_tools.operations.grid import STYLE, TickState, terminal_style

Matrix = tuple[tuple[float, float, float], ...]
MACHADO: dict[str, Matrix] = {
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
    "tritanopia": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602), (0.004733, 0.691367, 0.303900)),
    "typical": ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)),
}
# ΔE76 of about 2.3 is a just-noticeable difference; small cells side by side need far more.
MIN_DELTA_E = 15.0
# WCAG 2's AA contrast for normal text.
MIN_CONTRAST = 4.5
# The states drawn as coloured cells: `no tick` is a blank cell (no letter, the page's white). Every
# other state has its own colour, failed apart from failing and running apart from buffered.
COLOURED = [s for s in TickState if s is not TickState.NONE]


def _linear(hex_colour: str) -> tuple[float, float, float]:
    def channel(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(int(hex_colour[i : i + 2], 16)) for i in (1, 3, 5))
    return r, g, b


def _simulate(rgb: tuple[float, float, float], matrix: Matrix) -> tuple[float, float, float]:
    r, g, b = (min(1.0, max(0.0, sum(m * c for m, c in zip(row, rgb, strict=True)))) for row in matrix)
    return r, g, b


def _lab(rgb: tuple[float, float, float]) -> tuple[float, float, float]:
    r, g, b = rgb
    x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047
    y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b
    z = (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def _luminance(hex_colour: str) -> float:
    r, g, b = _linear(hex_colour)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(first: str, second: str) -> float:
    light, dark = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def closest_pair(colours: dict[str, str], vision: str) -> tuple[float, str, str]:
    seen = {state: _lab(_simulate(_linear(colour), MACHADO[vision])) for state, colour in colours.items()}
    return min((math.dist(seen[a], seen[b]), a, b) for a, b in itertools.combinations(seen, 2))


@pytest.mark.parametrize("vision", sorted(MACHADO))
def test_every_pair_of_states_stays_apart(vision: str) -> None:
    colours = {state.value: STYLE[state][1] for state in COLOURED}

    distance, first, second = closest_pair(colours, vision)

    assert distance >= MIN_DELTA_E, f"{first} and {second} are {distance:.1f} apart under {vision}"


@pytest.mark.parametrize("vision", ["protanopia", "deuteranopia", "tritanopia"])
def test_the_check_catches_the_old_palette(vision: str) -> None:
    """The palette before: failed/missed both reds and running/paused both blues, too close for each."""
    old = {"failed": "#c62828", "missed": "#ad1457", "running": "#0277bd", "paused": "#5c6bc0"}

    assert closest_pair(old, vision)[0] < MIN_DELTA_E


def test_every_letter_is_readable_on_its_colour() -> None:
    for state in TickState:
        letter, background, ink = STYLE[state]
        if letter.strip():
            contrast = _contrast(background, ink)
            assert contrast >= MIN_CONTRAST, f"{state.value}: {contrast:.1f}"


def test_every_state_has_its_own_letter() -> None:
    letters = [STYLE[state][0] for state in TickState]

    assert len(set(letters)) == len(letters)


def test_failed_and_failing_and_running_and_buffered_differ_in_colour_as_well_as_letter() -> None:
    """They shared a colour once: without colour the letters told them apart, with it nothing did."""
    for first, second in ((TickState.FAILED, TickState.FAILING), (TickState.RUNNING, TickState.BUFFERED)):
        assert STYLE[first][1] != STYLE[second][1], (first, second)
        assert terminal_style(first) != terminal_style(second), (first, second)
