"""Action sets derived from the buttons a ViZDoom .cfg makes available (pure Python, no engine).

`--action-set buttons` gives one action per button, as a user's own .cfg always had. `--action-set combined`
lets an agent move, turn, strafe and shoot in one step, as every tuned preset here does by hand
(deadly_corridor's MOVE_FORWARD+ATTACK, health_gathering's TURN_LEFT+MOVE_FORWARD): the buttons fall into
groups as Sample Factory's Doom action spaces have them (sf_examples/vizdoom/doom/action_space.py: one
discrete head per group), the buttons of a group exclude one another (forward or backward, never both), and
an action picks one option of every group: nothing, or one of its buttons. Sample Factory samples the groups
as separate heads; here their product is one flat softmax, so that the network, play.py and --export stay
as they are.

The product grows fast (deathmatch.cfg's 20 buttons would make thousands), so groups join it in order of
how much the shipped presets needed them (move, turn, attack, strafe, then the rest), each only while the
actions, the buttons left out counted too, stay within MAX_COMBINED_ACTIONS; the buttons of a group that does
not fit are still offered, each as an action of its own. The cap of 64 keeps deadly_corridor.cfg's 7 buttons
whole (3 x 3 x 2 x 3 = 54 actions), where adding SPEED or USE to the product would double it; a softmax over
a few dozen actions still learns on 2 cores (deadly_corridor's preset uses 10), one over hundreds spreads its
exploration thin. Measured against one action per button: not yet (issue 33).
"""
from __future__ import annotations

import itertools

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


def is_delta_button(button: str) -> bool:
    """Buttons that take a number (TURN_LEFT_RIGHT_DELTA...): a discrete action set leaves them out."""
    return button.endswith("_DELTA")


def single_button_actions(buttons: list[str]) -> list[list[str]]:
    """One action per (binary) button, in the .cfg's order."""
    return [[button] for button in buttons if not is_delta_button(button)]


def combined_actions(buttons: list[str], cap: int = MAX_COMBINED_ACTIONS) -> list[list[str]]:
    """Every combination of one option per button group (nothing, or one of the group's buttons), over the
    groups that fit, then each remaining binary button as an action of its own: at most `cap` actions in all
    (unless the .cfg has more buttons than that). Each action lists its buttons in the .cfg's order; the first
    holds no button (it waits)."""
    available = [b for b in buttons if not is_delta_button(b)]
    grouped: list[list[str]] = []
    size, alone = 1, len(available)  # the product's size; buttons that would be actions of their own
    for group in BUTTON_GROUPS:
        present = [b for b in group if b in available]
        if present and size * (len(present) + 1) + alone - len(present) <= cap:
            grouped.append(present)
            size, alone = size * (len(present) + 1), alone - len(present)
    in_product = {b for group in grouped for b in group}
    order = {b: i for i, b in enumerate(available)}
    actions = [sorted((b for b in choice if b is not None), key=order.__getitem__)
               for choice in itertools.product(*[[None, *group] for group in grouped])]
    actions += [[b] for b in available if b not in in_product]
    return actions
