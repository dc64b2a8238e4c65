"""Action sets derived from the buttons a ViZDoom .cfg makes available (pure Python and numpy, no engine).

`--action-set buttons` gives one action per button, as a user's own .cfg always had. `--action-set combined`
lets an agent move, turn, strafe and shoot in one step, as every tuned preset here does by hand
(deadly_corridor's MOVE_FORWARD+ATTACK, health_gathering's TURN_LEFT+MOVE_FORWARD): the buttons fall into
groups as Sample Factory's Doom action spaces have them (sf_examples/vizdoom/doom/action_space.py: one
discrete head per group), the buttons of a group exclude one another (forward or backward, never both), and
an action picks one option of every group: nothing, or one of its buttons. Sample Factory samples the groups
as separate heads; here their product is by default one flat softmax. `--policy-heads factorised` gives the
same action list one categorical head per group instead (`combined_action_heads`, `head_option_matrix`): the
network turns its heads into the flat list's joint log-probabilities, so that sampling, the loss, play.py and
--export stay as they are.

The product grows fast (deathmatch.cfg's 20 buttons would make thousands), so groups join it in order of
how much the shipped presets needed them (move, turn, attack, strafe, then the rest), each only while the
actions, the buttons left out counted too, stay within MAX_COMBINED_ACTIONS; the buttons of a group that does
not fit are still offered, each as an action of its own. The cap of 64 keeps deadly_corridor.cfg's 7 buttons
whole (3 x 3 x 2 x 3 = 54 actions), where adding SPEED or USE to the product would double it; a softmax over
a few dozen actions still learns on 2 cores (deadly_corridor's preset uses 10), one over hundreds spreads its
exploration thin. Measured against one action per button: not yet.

`--fine-turns` also offers each turn button of the product held for the first half of the step only
("TURN_LEFT/2"): a finer turn at the same frame skip. At 8 tics a held turn is 28 degrees a step, too coarse for
the arena's aim, where the maze's search wants 8 tics (docs/defaults/doom-defaults.md#frame-skip-6); a half turn is 14
degrees right after a held turn and 7 from rest (Doom turns at half speed for a turn key's first tics). The half
turns do not count against the cap: the same groups join the product as without them. A preset's `actions` may
name such buttons too.

A .cfg's delta buttons (TURN_LEFT_RIGHT_DELTA...) take a number, not pressed or released: each becomes bins, actions
named by the number they send ("TURN_LEFT_RIGHT_DELTA=-24"; DELTA_BINS, measured below). In `--action-set buttons`
each bin is an action of its own; in `combined` a delta button is a group of its own (nothing, or one of its
bins, as Sample Factory's Discretized head) joining after move, turn, attack and strafe, counted against the cap
as the pair of binary buttons it stands in for (nothing, one way, the other), its further bins not counted, as
half turns are not; left out of the product, its bins are actions of their own beyond the cap. So Sample
Factory's battle map with TURN_LEFT_RIGHT_DELTA has the same groups in its product as with TURN_LEFT and
TURN_RIGHT (3 x 2 x 3 x 11 = 198 actions, SPEED alone, against 3 x 3 x 2 x 3 = 54), and deathmatch.cfg, with
both, the product it had without its delta buttons. A delta button without bins (MOVE_UP_DOWN_DELTA) is a
ConfigError where an action set is derived from the .cfg, never left out.
"""
from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np

MAX_COMBINED_ACTIONS = 64

# Mutually exclusive buttons, in the order the groups join the product. A delta button is a group of its own (its
# bins exclude one another), after move, turn, attack and strafe: where a .cfg has both (deathmatch.cfg's
# TURN_LEFT, TURN_RIGHT and TURN_LEFT_RIGHT_DELTA), the binary groups keep their place. A group none of whose
# buttons a .cfg has is skipped: the delta groups change nothing for a .cfg without delta buttons.
BUTTON_GROUPS: tuple[tuple[str, ...], ...] = (
    ("MOVE_FORWARD", "MOVE_BACKWARD"),
    ("TURN_LEFT", "TURN_RIGHT"),
    ("ATTACK",),
    ("MOVE_LEFT", "MOVE_RIGHT"),
    ("TURN_LEFT_RIGHT_DELTA",),
    ("MOVE_FORWARD_BACKWARD_DELTA",),
    ("MOVE_LEFT_RIGHT_DELTA",),
    ("LOOK_UP_DOWN_DELTA",),
    ("SPEED",),
    ("USE",),
    ("LOOK_UP", "LOOK_DOWN"),
    ("JUMP", "CROUCH"),
    ("SELECT_NEXT_WEAPON", "SELECT_PREV_WEAPON"),
)


class DeltaBins(NamedTuple):
    """How a delta button becomes actions: the values make_action gets for it on each tic (0, no bin, is the
    group's "nothing"), and whether a bin's name is the step's total (angles) or that per-tic value (speeds)."""
    tic_values: tuple[float, ...]
    named_per_step: bool


# Measured in ViZDoom 1.3.2 (defend_the_center.wad): a delta button's value acts on every tic of
# make_action(action, tics), then lapses. TURN_LEFT_RIGHT_DELTA 10 turned 9.998 degrees in 1 tic, 39.99 in 4,
# 79.98 in 8, and 0 in the idle tics after; 2.5 for 4 tics 9.997; 10/3 for 4 tics 13.315 (the engine keeps 1/182
# of a degree a tic); positive turns right (ANGLE falls). LOOK_UP_DOWN_DELTA alike: 2 for 6 tics, 12 degrees up.
# Sample Factory hands its bins to make_action with its frame skip, so its "11 bins over +-10 degrees" turn
# +-10 degrees a tic, +-40 a step at 4 tics. Here an angle bin keeps that speed and is named by what the step
# turns: "TURN_LEFT_RIGHT_DELTA=-24" at 6 tics sends -4 on each of its tics (DoomEnvironment).
# MOVE_FORWARD_BACKWARD_DELTA and MOVE_LEFT_RIGHT_DELTA are speeds, in Doom's move units: 25 moved exactly as
# MOVE_FORWARD (62.8 map units in 18 tics from rest), 50 as MOVE_FORWARD with SPEED (125.7; 100 no faster),
# sideways 24 as MOVE_RIGHT and 40 as MOVE_RIGHT with SPEED. How far a step goes depends on the momentum the
# player carries, so a move bin is named by the speed it holds each tic: the binary buttons' walk and run.
# MOVE_UP_DOWN_DELTA moved nothing on the ground (it flies or swims): no bins.
ANGLE_BINS = DeltaBins(tuple(2.0 * k for k in range(-5, 6) if k), named_per_step=True)  # -10, -8, ..., 10 a tic
DELTA_BINS: dict[str, DeltaBins] = {
    "TURN_LEFT_RIGHT_DELTA": ANGLE_BINS,
    "LOOK_UP_DOWN_DELTA": ANGLE_BINS,
    "MOVE_FORWARD_BACKWARD_DELTA": DeltaBins((-50.0, -25.0, 25.0, 50.0), named_per_step=False),
    "MOVE_LEFT_RIGHT_DELTA": DeltaBins((-40.0, -24.0, 24.0, 40.0), named_per_step=False),
}
DELTA_VALUE = "="  # "TURN_LEFT_RIGHT_DELTA=-24": a delta bin's name


# A button held for the first half of a step's tics only: "TURN_LEFT/2".
FIRST_HALF = "/2"
FINE_TURN_GROUP = ("TURN_LEFT", "TURN_RIGHT")


def pressed_button(name: str) -> str:
    """The engine's button an action's name holds down or sets: "TURN_LEFT" for "TURN_LEFT/2",
    "TURN_LEFT_RIGHT_DELTA" for "TURN_LEFT_RIGHT_DELTA=-24"."""
    name = name.split(DELTA_VALUE, 1)[0]
    return name[:-len(FIRST_HALF)] if name.endswith(FIRST_HALF) else name


def is_first_half(name: str) -> bool:
    """Whether an action holds this button for the first half of the step only."""
    return name.endswith(FIRST_HALF)


def missing_buttons(actions: list[list[str]], available: list[str]) -> list[str]:
    """The buttons the actions hold down or set (half-held ones and delta bins by their engine name) that
    `available` lacks, sorted."""
    return sorted({pressed_button(b) for action in actions for b in action} - set(available))


def is_delta_button(button: str) -> bool:
    """Buttons that take a number (TURN_LEFT_RIGHT_DELTA...): an action set offers them as bins (DELTA_BINS)."""
    return button.endswith("_DELTA")


def unbinnable_delta_buttons(buttons: list[str]) -> list[str]:
    """The delta buttons among `buttons` that have no bins (MOVE_UP_DOWN_DELTA), in their order."""
    return [b for b in buttons if is_delta_button(b) and b not in DELTA_BINS]


def _no_bins(button: str) -> str:
    return f"the delta button {button} has no bins (binned: {', '.join(DELTA_BINS)})"


def delta_bin_name(button: str, value: float) -> str:
    """"TURN_LEFT_RIGHT_DELTA=-24": no "+" sign, which joins an action's buttons in its name."""
    return f"{button}{DELTA_VALUE}{round(value, 6):g}"


def delta_bins(button: str, frame_skip: int | None) -> list[str]:
    """A delta button's bins as action names, in rising order: an angle's named by what a step of `frame_skip`
    tics turns, a speed's by its value. ValueError for a delta button without bins, or an angle's without
    `frame_skip`."""
    if button not in DELTA_BINS:
        raise ValueError(_no_bins(button))
    bins = DELTA_BINS[button]
    if bins.named_per_step and not frame_skip:
        raise ValueError(f"the bins of {button} are named by a step's turn: they need the frame skip")
    return [delta_bin_name(button, v * frame_skip if bins.named_per_step else v) for v in bins.tic_values]


def delta_value(name: str) -> float | None:
    """The number a delta bin's name gives (-24.0 for "TURN_LEFT_RIGHT_DELTA=-24"); None for a binary button's
    name. ValueError for a number that is not a finite one."""
    if DELTA_VALUE not in name:
        return None
    value = float(name.split(DELTA_VALUE, 1)[1])
    if not math.isfinite(value):
        raise ValueError(f"{name}: a delta bin's value must be a finite number")
    return value


def tic_value(name: str, frame_skip: int) -> float:
    """What make_action gets for the button of an action's name on each tic of a step of `frame_skip` tics: 1 for a
    binary button held; a delta bin's value, an angle's spread evenly over the tics (so that the step turns what
    the name says), a speed's as it is (DELTA_BINS, measured)."""
    value = delta_value(name)
    if value is None:
        return 1.0
    return value / frame_skip if DELTA_BINS[pressed_button(name)].named_per_step else value


def action_name_problem(name: str) -> str | None:
    """Why an action's button name cannot be played, or None: a delta button needs a value from its bins'
    kind ("TURN_LEFT_RIGHT_DELTA=-24"), and only a delta button takes one."""
    button = pressed_button(name)
    if not is_delta_button(button):
        return f"{name!r}: only a delta button takes a value" if DELTA_VALUE in name else None
    if button not in DELTA_BINS:
        return f"{name!r}: {_no_bins(button)}"
    try:
        value = delta_value(name)
    except ValueError:
        return f"{name!r}: a delta button's value must be a finite number, e.g. {button}=-24"
    if value is None:
        return f"{name!r} is a delta button: an action sets it to a number, e.g. {button}=-24"
    return None


def _offered(button: str, frame_skip: int | None) -> list[str]:
    """The options a button offers an action set: itself, or a delta button's bins."""
    return delta_bins(button, frame_skip) if is_delta_button(button) else [button]


def single_button_actions(buttons: list[str], frame_skip: int | None = None) -> list[list[str]]:
    """One action per binary button and per bin of a delta button, in the .cfg's order (`frame_skip`: the
    step's tics, which name an angle's bins)."""
    return [[option] for button in buttons for option in _offered(button, frame_skip)]


def _product_and_left_over(buttons: list[str], cap: int, fine_turns: bool = False,
                           frame_skip: int | None = None) -> tuple[list[list[str]], list[str]]:
    """(the groups that join the product, each as the options it offers: its buttons the .cfg makes available, a
    delta button's bins, the turn group with its half turns when `fine_turns`; the options left out, each to be an
    action of its own), so that there are at most `cap` actions in all. Half turns are not counted; a delta
    button counts as the pair of binary buttons it stands in for (nothing, one way, the other) where it joins, and
    its bins left out are actions beyond the cap: it never takes a binary group's place in the product."""
    counted = {b: 2 if is_delta_button(b) else 1 for b in buttons}  # options each button counts as in the product
    grouped: list[list[str]] = []
    size = 1  # the product's size
    alone = sum(not is_delta_button(b) for b in buttons)  # binary buttons that would be actions of their own
    for group in BUTTON_GROUPS:
        present = [b for b in group if b in counted]
        options = sum(counted[b] for b in present)
        binary = sum(not is_delta_button(b) for b in present)
        if present and size * (options + 1) + alone - binary <= cap:
            grouped.append(present)
            size, alone = size * (options + 1), alone - binary
    in_product = {b for group in grouped for b in group}
    grouped = [[option for b in group for option in _offered(b, frame_skip)] for group in grouped]
    if fine_turns:
        grouped = [group + [b + FIRST_HALF for b in group] if set(group) <= set(FINE_TURN_GROUP) else group
                   for group in grouped]
    return grouped, [option for b in buttons if b not in in_product for option in _offered(b, frame_skip)]


def combined_actions(buttons: list[str], cap: int = MAX_COMBINED_ACTIONS, fine_turns: bool = False,
                     frame_skip: int | None = None) -> list[list[str]]:
    """Every combination of one option per button group (nothing, or one of the group's buttons or bins), over
    the groups that fit, then each remaining option as an action of its own: at most `cap` actions in all
    (unless the .cfg has more buttons than that), delta bins as _product_and_left_over counts them. Each action
    lists its buttons in the .cfg's order; the first holds no button (it waits). With `fine_turns` the turn group
    also offers its half turns; `frame_skip` names an angle's bins (delta_bins)."""
    grouped, left_over = _product_and_left_over(buttons, cap, fine_turns, frame_skip)
    order = {b: i for i, b in enumerate(buttons)}
    actions = [sorted((b for b in choice if b is not None), key=lambda b: order[pressed_button(b)])
               for choice in itertools.product(*[[None, *group] for group in grouped])]
    return actions + [[b] for b in left_over]


# Option 0 of every head, named so that no button can be mistaken for it (policy.json shows these names).
NO_BUTTON = "(none)"  # a group head's "press none of this group's buttons"
COMBINATION = "(combination)"  # the "which" head's "one of the combinations the group heads choose"


def combined_action_heads(buttons: list[str], cap: int = MAX_COMBINED_ACTIONS, fine_turns: bool = False,
                          frame_skip: int | None = None) -> list[list[str]]:
    """The factorised policy over `combined_actions(buttons, cap, fine_turns, frame_skip)`: one head per group of
    the product, options [NO_BUTTON, *its buttons or bins]; then, only when some options are actions of their own,
    a "which" head with options [COMBINATION, *those options]."""
    grouped, left_over = _product_and_left_over(buttons, cap, fine_turns, frame_skip)
    heads = [[NO_BUTTON, *group] for group in grouped]
    return heads + [[COMBINATION, *left_over]] if left_over else heads


def head_option_matrix(actions: list[list[str]], heads: list[list[str]]) -> np.ndarray:
    """[total options, A] 0/1: column a marks the option each head takes in action a, so that the sum of the
    marked options' log-probabilities is action a's joint log-probability. A combination takes one option of
    every group head (and COMBINATION of the "which" head); a left-over button's action takes its option of the
    "which" head alone, the group heads summed out. ValueError unless the actions are exactly the outcomes of
    the heads, each once (else the joint would not sum to 1)."""
    has_which = bool(heads) and heads[-1][0] == COMBINATION
    groups, which = (heads[:-1], heads[-1]) if has_which else (heads, None)
    offsets = np.cumsum([0, *map(len, heads)])  # each head's first row
    which_row = offsets[-2] if has_which else None  # the "which" head's first row
    matrix = np.zeros((offsets[-1], len(actions)), np.float32)
    for column, action in enumerate(actions):
        if which is not None and len(action) == 1 and action[0] in which[1:]:
            matrix[which_row + which.index(action[0]), column] = 1.0
            continue
        for head, group in enumerate(groups):
            pressed = [b for b in action if b in group[1:]]
            if len(pressed) > 1:
                raise ValueError(f"action {action} presses {pressed}, more than one option of head {group}")
            matrix[offsets[head] + (group.index(pressed[0]) if pressed else 0), column] = 1.0
        if not set(action) <= {b for group in groups for b in group[1:]}:
            raise ValueError(f"action {action} presses buttons no head offers ({heads})")
        if which is not None:
            matrix[which_row, column] = 1.0
    outcomes = int(np.prod([len(group) for group in groups])) + (len(which) - 1 if which else 0)
    if len(actions) != outcomes or len({tuple(column) for column in matrix.T}) != len(actions):
        raise ValueError(f"the {len(actions)} actions are not the {outcomes} outcomes of the heads {heads}, "
                         f"each once")
    return matrix
