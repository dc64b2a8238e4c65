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
exploration thin. Measured against one action per button: not yet (issue 33).

`--fine-turns` also offers each turn button of the product held for the first half of the step only
("TURN_LEFT/2"): a finer turn at the same frame skip. At 8 tics a held turn is 28 degrees a step, too coarse for
the arena's aim, where the maze's search wants 8 tics (docs/scenarios.md, ninth session); a half turn is 14
degrees right after a held turn and 7 from rest (Doom turns at half speed for a turn key's first tics). The half
turns do not count against the cap: the same groups join the product as without them. A preset's `actions` may
name such buttons too.
"""
from __future__ import annotations

import itertools

import numpy as np

MAX_COMBINED_ACTIONS = 64

# Mutually exclusive buttons, in the order the groups join the product.
BUTTON_GROUPS: tuple[tuple[str, ...], ...] = (
    ("MOVE_FORWARD", "MOVE_BACKWARD"),
    ("TURN_LEFT", "TURN_RIGHT"),
    ("ATTACK",),
    ("MOVE_LEFT", "MOVE_RIGHT"),
    ("SPEED",),
    ("USE",),
    ("LOOK_UP", "LOOK_DOWN"),
    ("JUMP", "CROUCH"),
    ("SELECT_NEXT_WEAPON", "SELECT_PREV_WEAPON"),
)


# A button held for the first half of a step's tics only: "TURN_LEFT/2".
FIRST_HALF = "/2"
FINE_TURN_GROUP = ("TURN_LEFT", "TURN_RIGHT")


def pressed_button(name: str) -> str:
    """The engine's button an action's name holds down: "TURN_LEFT" for "TURN_LEFT/2"."""
    return name[:-len(FIRST_HALF)] if name.endswith(FIRST_HALF) else name


def is_first_half(name: str) -> bool:
    """Whether an action holds this button for the first half of the step only."""
    return name.endswith(FIRST_HALF)


def missing_buttons(actions: list[list[str]], available: list[str]) -> list[str]:
    """The buttons the actions hold down (half-held ones by their engine name) that `available` lacks, sorted."""
    return sorted({pressed_button(b) for action in actions for b in action} - set(available))


def is_delta_button(button: str) -> bool:
    """Buttons that take a number (TURN_LEFT_RIGHT_DELTA...): a discrete action set leaves them out."""
    return button.endswith("_DELTA")


def single_button_actions(buttons: list[str]) -> list[list[str]]:
    """One action per (binary) button, in the .cfg's order."""
    return [[button] for button in buttons if not is_delta_button(button)]


def _product_and_left_over(buttons: list[str], cap: int, fine_turns: bool = False) -> tuple[list[list[str]], list[str]]:
    """(the groups that join the product, each as its buttons the .cfg makes available, the turn group with its
    half turns when `fine_turns`; the binary buttons left out, each to be an action of its own), so that there
    are at most `cap` actions in all, the half turns not counted."""
    available = [b for b in buttons if not is_delta_button(b)]
    grouped: list[list[str]] = []
    size, alone = 1, len(available)  # the product's size; buttons that would be actions of their own
    for group in BUTTON_GROUPS:
        present = [b for b in group if b in available]
        if present and size * (len(present) + 1) + alone - len(present) <= cap:
            grouped.append(present)
            size, alone = size * (len(present) + 1), alone - len(present)
    in_product = {b for group in grouped for b in group}
    if fine_turns:
        grouped = [group + [b + FIRST_HALF for b in group] if set(group) <= set(FINE_TURN_GROUP) else group
                   for group in grouped]
    return grouped, [b for b in available if b not in in_product]


def combined_actions(buttons: list[str], cap: int = MAX_COMBINED_ACTIONS, fine_turns: bool = False) -> list[list[str]]:
    """Every combination of one option per button group (nothing, or one of the group's buttons), over the
    groups that fit, then each remaining binary button as an action of its own: at most `cap` actions in all
    (unless the .cfg has more buttons than that). Each action lists its buttons in the .cfg's order; the first
    holds no button (it waits). With `fine_turns` the turn group also offers its half turns."""
    grouped, left_over = _product_and_left_over(buttons, cap, fine_turns)
    order = {b: i for i, b in enumerate(buttons)}
    actions = [sorted((b for b in choice if b is not None), key=lambda b: order[pressed_button(b)])
               for choice in itertools.product(*[[None, *group] for group in grouped])]
    return actions + [[b] for b in left_over]


# Option 0 of every head, named so that no button can be mistaken for it (policy.json shows these names).
NO_BUTTON = "(none)"  # a group head's "press none of this group's buttons"
COMBINATION = "(combination)"  # the "which" head's "one of the combinations the group heads choose"


def combined_action_heads(buttons: list[str], cap: int = MAX_COMBINED_ACTIONS,
                          fine_turns: bool = False) -> list[list[str]]:
    """The factorised policy over `combined_actions(buttons, cap, fine_turns)`: one head per group of the
    product, options [NO_BUTTON, *its buttons]; then, only when some buttons are actions of their own, a "which"
    head with options [COMBINATION, *those buttons]."""
    grouped, left_over = _product_and_left_over(buttons, cap, fine_turns)
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
