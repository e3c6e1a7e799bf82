"""The task catalogue of TableTop-Skills: 18 seen templates (RLBench-18 skill structures) and
23 unseen ones (AGNOSTOS names; Level-1 13, Level-2 10) — no Dagster import.

A template names its objects by role (role -> object type), its ground-truth skill sequence
(verb, argument roles) — used by the scripted expert and for *evaluation only* —, its goal
flags (set by the executor, in order), its instruction phrases (text, mention1, mention2) and
scene options (articulated parts start open; the movable starts misaligned with its slot).
"""
from __future__ import annotations

from dataclasses import dataclass, field

VERBS = ("Reach", "Grasp", "Release", "Lift", "Move", "Insert", "Slide", "Rotate", "Pull", "Push", "Press")
RELATIONAL = ("Move", "Insert", "Slide")          # Verb[movable, target]
GRIPPER_VERBS = ("Grasp", "Release")

# type -> (kind, display name). Kinds: movable, articulated, pluggable, pressable, rotatable, fixture
OBJECT_TYPES: dict[str, tuple[str, str]] = {
    "jar_lid": ("movable", "jar lid"), "jar": ("fixture", "glass jar"),
    "drawer": ("articulated", "drawer handle"), "block": ("movable", "block"),
    "color_target": ("fixture", "colored target square"), "broom": ("movable", "broom"),
    "dustpan": ("fixture", "dustpan"), "chicken": ("movable", "chicken"), "plate": ("fixture", "plate"),
    "tap": ("rotatable", "tap"), "item": ("movable", "item"), "base_block": ("movable", "green block"),
    "bulb": ("movable", "light bulb"), "lamp": ("fixture", "lamp holder"), "money": ("movable", "money"),
    "safe": ("fixture", "safe"), "wine": ("movable", "wine bottle"), "rack": ("fixture", "wine rack"),
    "can": ("movable", "soup can"), "cupboard": ("fixture", "cupboard shelf"), "shape": ("movable", "star shape"),
    "sorter": ("fixture", "shape sorter"), "button": ("pressable", "button"), "ring": ("movable", "square ring"),
    "peg": ("fixture", "square peg"), "cup": ("movable", "cup"), "cup2": ("movable", "blue cup"),
    "cup_holder": ("fixture", "cup holder"), "stick": ("movable", "stick"), "cube_target": ("fixture", "target cube"),
    # unseen objects
    "toilet_roll": ("movable", "toilet roll"), "roll_stand": ("fixture", "toilet roll stand"),
    "knife": ("movable", "knife"), "board": ("fixture", "chopping board"),
    "fridge": ("articulated", "fridge door"), "microwave": ("articulated", "microwave door"),
    "laptop": ("articulated", "laptop lid"), "phone": ("movable", "phone"), "phone_base": ("fixture", "phone base"),
    "toilet_seat": ("articulated", "toilet seat"), "lamp_switch": ("pressable", "lamp switch"),
    "book": ("movable", "book"), "shelf": ("fixture", "bookshelf"), "umbrella": ("movable", "umbrella"),
    "umbrella_stand": ("fixture", "umbrella stand"), "grill": ("articulated", "grill lid"),
    "rubbish": ("movable", "rubbish"), "bin": ("fixture", "bin"), "usb": ("movable", "usb stick"),
    "computer": ("fixture", "usb port"), "pan_lid": ("movable", "saucepan lid"), "pan": ("fixture", "saucepan"),
    "dish": ("movable", "plate"), "dish_rack": ("fixture", "dish rack"), "mat": ("fixture", "table mat"),
    "ball": ("movable", "basketball"), "hoop": ("fixture", "hoop"), "spatula": ("movable", "spatula"),
    "cube": ("fixture", "cube"), "rope": ("movable", "rope end"), "mark_a": ("fixture", "left mark"),
    "mark_b": ("fixture", "right mark"), "oven_knob": ("rotatable", "oven knob"), "wand": ("movable", "wand"),
    "wire_start": ("fixture", "wire start"), "wire_end": ("fixture", "wire end"),
    "watering_can": ("movable", "watering can"), "plant": ("fixture", "plant"),
    "charger": ("pluggable", "charger"),
}
GRASPABLE = ("movable", "articulated", "pluggable", "rotatable")
DISTRACTORS = ("block", "cup", "can", "item", "book", "rubbish", "ball", "money")


@dataclass(frozen=True)
class Task:
    name: str
    split: str                          # "seen" | "unseen"
    level: int                          # 0 seen, 1 or 2 unseen
    objects: dict[str, str]             # role -> object type
    skills: tuple[tuple[str, tuple[str, ...]], ...]   # ground truth (evaluation only)
    goal: tuple[str, ...]               # flags with roles, e.g. "on:obj:target"
    phrases: tuple[tuple[str, str, str], ...]         # (text, mention of arg 1, mention of arg 2 or "")
    start_open: tuple[str, ...] = ()    # articulated roles that start open
    misaligned: tuple[str, ...] = ()    # movable roles that start a quarter turn off their slot
    mirrors: str = ""                   # the seen task it near-copies (report only)
    extra: dict = field(default_factory=dict)

    @property
    def instruction(self) -> str:
        return ", then ".join(p[0] for p in self.phrases)

    @property
    def verbs(self) -> tuple[str, ...]:
        return tuple(v for v, _ in self.skills)


def S(*items: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """'Reach:obj', 'Move:obj,target' -> ((verb, roles), ...)."""
    out = []
    for item in items:
        verb, _, args = item.partition(":")
        out.append((verb, tuple(args.split(","))))
    return tuple(out)


PICK = ("Reach:obj", "Grasp:obj", "Lift:obj")
PUT_ON = (*PICK, "Move:obj,target", "Release:obj")
PUT_IN = (*PICK, "Move:obj,target", "Insert:obj,target", "Release:obj")
OPEN = ("Reach:part", "Grasp:part", "Pull:part", "Release:part")


def _seen() -> list[Task]:
    t = []
    add = t.append
    add(Task("close_jar", "seen", 0, {"obj": "jar_lid", "target": "jar"},
             S(*PICK, "Move:obj,target", "Rotate:obj", "Release:obj"), ("rotated:obj", "on:obj:target"),
             (("put the lid on the jar", "jar lid", "jar"), ("twist it", "jar lid", ""))))
    add(Task("open_drawer", "seen", 0, {"part": "drawer"}, S(*OPEN), ("open:part",),
             (("open the drawer", "drawer handle", ""),)))
    add(Task("slide_block_to_color_target", "seen", 0, {"obj": "block", "target": "color_target"},
             S("Reach:obj", "Grasp:obj", "Slide:obj,target", "Release:obj"), ("at:obj:target",),
             (("slide the block to the colored target", "block", "colored target"),)))
    add(Task("sweep_to_dustpan_of_size", "seen", 0, {"obj": "broom", "target": "dustpan"},
             S("Reach:obj", "Grasp:obj", "Slide:obj,target", "Release:obj"), ("at:obj:target",),
             (("sweep the dirt into the dustpan with the broom", "broom", "dustpan"),)))
    add(Task("meat_off_grill", "seen", 0, {"obj": "chicken", "target": "plate"}, S(*PUT_ON), ("on:obj:target",),
             (("take the chicken off the grill and put it on the plate", "chicken", "plate"),)))
    add(Task("turn_tap", "seen", 0, {"part": "tap"}, S("Reach:part", "Grasp:part", "Rotate:part", "Release:part"),
             ("turned:part",), (("turn the tap", "tap", ""),)))
    add(Task("put_item_in_drawer", "seen", 0, {"part": "drawer", "obj": "item"},
             S(*OPEN, *PICK, "Move:obj,part", "Release:obj", "Reach:part", "Push:part"),
             ("open:part", "on:obj:part", "closed:part"),
             (("open the drawer", "drawer handle", ""), ("put the item in the drawer", "item", "drawer"),
              ("close the drawer", "drawer handle", ""))))
    add(Task("stack_blocks", "seen", 0, {"obj": "block", "target": "base_block", "obj2": "item"},
             S(*PUT_ON, "Reach:obj2", "Grasp:obj2", "Lift:obj2", "Move:obj2,obj", "Release:obj2"),
             ("on:obj:target", "on:obj2:obj"),
             (("stack the block on the green block", "block", "green block"),
              ("stack the item on the block", "item", "block"))))
    add(Task("light_bulb_in", "seen", 0, {"obj": "bulb", "target": "lamp"}, S(*PUT_IN), ("in:obj:target",),
             (("screw the light bulb into the lamp holder", "light bulb", "lamp holder"),)))
    add(Task("put_money_in_safe", "seen", 0, {"obj": "money", "target": "safe"},
             S(*PICK, "Insert:obj,target", "Release:obj"), ("in:obj:target",),
             (("put the money in the safe", "money", "safe"),)))
    add(Task("place_wine_at_rack_location", "seen", 0, {"obj": "wine", "target": "rack"}, S(*PUT_IN),
             ("in:obj:target",), (("place the wine bottle in the wine rack", "wine bottle", "wine rack"),)))
    add(Task("put_groceries_in_cupboard", "seen", 0, {"obj": "can", "target": "cupboard"}, S(*PUT_ON),
             ("on:obj:target",), (("put the soup can in the cupboard", "soup can", "cupboard shelf"),)))
    add(Task("place_shape_in_shape_sorter", "seen", 0, {"obj": "shape", "target": "sorter"},
             S(*PICK, "Move:obj,target", "Rotate:obj", "Insert:obj,target", "Release:obj"), ("in:obj:target",),
             (("pick up the star shape", "star shape", ""), ("rotate it", "star shape", ""),
              ("insert it into the shape sorter", "star shape", "shape sorter")), misaligned=("obj",)))
    add(Task("push_buttons", "seen", 0, {"part": "button", "part2": "button"},
             S("Reach:part", "Press:part", "Reach:part2", "Press:part2"), ("pressed:part", "pressed:part2"),
             (("push the first button", "button", ""), ("push the second button", "button", ""))))
    add(Task("insert_onto_square_peg", "seen", 0, {"obj": "ring", "target": "peg"}, S(*PUT_IN),
             ("in:obj:target",), (("put the square ring onto the square peg", "square ring", "square peg"),)))
    add(Task("stack_cups", "seen", 0, {"obj": "cup", "target": "cup2"}, S(*PUT_ON), ("on:obj:target",),
             (("stack the cup on the blue cup", "cup", "blue cup"),)))
    add(Task("place_cups", "seen", 0, {"obj": "cup", "target": "cup_holder"}, S(*PUT_IN), ("in:obj:target",),
             (("place the cup on the cup holder", "cup", "cup holder"),)))
    add(Task("reach_and_drag", "seen", 0, {"obj": "stick", "target": "cube_target"},
             S("Reach:obj", "Grasp:obj", "Slide:obj,target", "Release:obj"), ("at:obj:target",),
             (("use the stick to drag the cube onto the target", "stick", "target cube"),)))
    return t


def _unseen() -> list[Task]:
    t = []
    add = t.append
    # Level-1: seen verbs and bigrams on new objects
    add(Task("put_toilet_roll_on_stand", "unseen", 1, {"obj": "toilet_roll", "target": "roll_stand"}, S(*PUT_IN),
             ("in:obj:target",), (("put the toilet roll onto the stand", "toilet roll", "toilet roll stand"),)))
    add(Task("put_knife_on_chopping_board", "unseen", 1, {"obj": "knife", "target": "board"}, S(*PUT_ON),
             ("on:obj:target",), (("take the knife and put it on the chopping board", "knife", "chopping board"),),
             mirrors="meat_off_grill"))
    add(Task("open_fridge", "unseen", 1, {"part": "fridge"}, S(*OPEN), ("open:part",),
             (("open the fridge door", "fridge door", ""),)))
    add(Task("close_microwave", "unseen", 1, {"part": "microwave"}, S("Reach:part", "Push:part"), ("closed:part",),
             (("close the microwave door", "microwave door", ""),), start_open=("part",)))
    add(Task("close_laptop_lid", "unseen", 1, {"part": "laptop"}, S("Reach:part", "Push:part"), ("closed:part",),
             (("close the laptop lid", "laptop lid", ""),), start_open=("part",)))
    add(Task("phone_on_base", "unseen", 1, {"obj": "phone", "target": "phone_base"}, S(*PUT_ON),
             ("on:obj:target",), (("put the phone on the phone base", "phone", "phone base"),),
             mirrors="put_groceries_in_cupboard"))
    add(Task("toilet_seat_down", "unseen", 1, {"part": "toilet_seat"}, S("Reach:part", "Push:part"),
             ("closed:part",), (("close the toilet seat", "toilet seat", ""),), start_open=("part",)))
    add(Task("lamp_off", "unseen", 1, {"part": "lamp_switch"}, S("Reach:part", "Press:part"), ("pressed:part",),
             (("press the lamp switch to turn the lamp off", "lamp switch", ""),)))
    add(Task("lamp_on", "unseen", 1, {"part": "lamp_switch"}, S("Reach:part", "Press:part"), ("pressed:part",),
             (("press the lamp switch to turn the lamp on", "lamp switch", ""),)))
    add(Task("put_books_on_bookshelf", "unseen", 1, {"obj": "book", "target": "shelf"}, S(*PUT_IN),
             ("in:obj:target",), (("put the book into the bookshelf", "book", "bookshelf"),)))
    add(Task("put_umbrella_in_umbrella_stand", "unseen", 1, {"obj": "umbrella", "target": "umbrella_stand"},
             S(*PICK, "Insert:obj,target", "Release:obj"), ("in:obj:target",),
             (("put the umbrella in the umbrella stand", "umbrella", "umbrella stand"),)))
    add(Task("open_grill", "unseen", 1, {"part": "grill"}, S(*OPEN), ("open:part",),
             (("open the grill lid", "grill lid", ""),)))
    add(Task("put_rubbish_in_bin", "unseen", 1, {"obj": "rubbish", "target": "bin"}, S(*PUT_ON), ("on:obj:target",),
             (("put the rubbish in the bin", "rubbish", "bin"),)))
    # Level-2: an unseen bigram (or a rare verb in a new role)
    add(Task("insert_usb_in_computer", "unseen", 2, {"obj": "usb", "target": "computer"},
             S(*PICK, "Rotate:obj", "Insert:obj,target", "Release:obj"), ("in:obj:target",),
             (("pick up the usb stick", "usb stick", ""), ("rotate it", "usb stick", ""),
              ("insert it into the usb port", "usb stick", "usb port")), misaligned=("obj",)))
    add(Task("take_off_saucepan_lid", "unseen", 2, {"obj": "pan_lid", "target": "pan"},
             S(*PICK, "Release:obj"), ("lifted:obj",),
             (("lift the lid off the saucepan", "saucepan lid", ""), ("let go of it", "saucepan lid", ""))))
    add(Task("take_plate_off_colored_dish_rack", "unseen", 2, {"obj": "dish", "target": "mat"},
             S(*PICK, "Rotate:obj", "Move:obj,target", "Release:obj"), ("rotated:obj", "on:obj:target"),
             (("lift the plate off the dish rack", "plate", ""), ("turn it flat", "plate", ""),
              ("put it on the table mat", "plate", "table mat"))))
    add(Task("put_ball_in_hoop", "unseen", 2, {"obj": "ball", "target": "hoop"},
             S("Reach:obj", "Grasp:obj", "Move:obj,target", "Release:obj"), ("on:obj:target",),
             (("grab the basketball", "basketball", ""), ("move it over the hoop and drop it", "basketball", "hoop"))))
    add(Task("scoop_with_spatula", "unseen", 2, {"obj": "spatula", "target": "cube"},
             S("Reach:obj", "Grasp:obj", "Slide:obj,target", "Lift:obj", "Release:obj"),
             ("at:obj:target", "lifted:obj"),
             (("slide the spatula under the cube", "spatula", "cube"), ("lift it up", "spatula", ""))))
    add(Task("straighten_rope", "unseen", 2, {"obj": "rope", "target": "mark_a", "target2": "mark_b"},
             S("Reach:obj", "Grasp:obj", "Slide:obj,target", "Slide:obj,target2", "Release:obj"),
             ("at:obj:target", "at:obj:target2"),
             (("slide the rope end to the left mark", "rope end", "left mark"),
              ("slide it on to the right mark", "rope end", "right mark"))))
    add(Task("turn_oven_on", "unseen", 2, {"part": "oven_knob"}, S("Reach:part", "Rotate:part"), ("turned:part",),
             (("reach the oven knob", "oven knob", ""), ("rotate it", "oven knob", ""))))
    add(Task("beat_the_buzz", "unseen", 2, {"obj": "wand", "target": "wire_start", "target2": "wire_end"},
             S(*PICK, "Insert:obj,target", "Slide:obj,target2", "Release:obj"), ("in:obj:target", "at:obj:target2"),
             (("pick up the wand", "wand", ""), ("put it into the wire start", "wand", "wire start"),
              ("slide it to the wire end", "wand", "wire end"))))
    add(Task("water_plants", "unseen", 2, {"obj": "watering_can", "target": "plant"},
             S(*PICK, "Move:obj,target", "Rotate:obj", "Rotate:obj", "Release:obj"), ("poured:obj:target",),
             (("pick up the watering can", "watering can", ""), ("move it over the plant", "watering can", "plant"),
              ("tilt it", "watering can", ""), ("tilt it further", "watering can", ""))))
    add(Task("unplug_charger", "unseen", 2, {"part": "charger"},
             S("Reach:part", "Grasp:part", "Pull:part", "Lift:part", "Release:part"), ("unplugged:part", "lifted:part"),
             (("pull the charger out of the socket", "charger", ""), ("lift it up", "charger", ""))))
    return t


SEEN: tuple[Task, ...] = tuple(_seen())
UNSEEN: tuple[Task, ...] = tuple(_unseen())
TASKS: dict[str, Task] = {t.name: t for t in (*SEEN, *UNSEEN)}


def bigrams(verbs) -> set[str]:
    v = list(verbs)
    return {f"{a}->{b}" for a, b in zip(v, v[1:])}


def seen_bigrams() -> set[str]:
    return set().union(*(bigrams(t.verbs) for t in SEEN))
