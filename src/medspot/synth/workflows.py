"""Clinical workflows as sequences of screen states and targets, with annotator-style
instructions and paraphrases.

A workflow starts from a screen state and, step by step, names the widget to act on, the action,
and the state the action leads to; the next step is shown on that state. Widgets are named by
their ids (see `medspot.synth.render`); the generator looks their rectangles up in the rendering.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace

from medspot.synth.dialogs import FILES, MEASURE_TABS
from medspot.synth.render import LAYOUTS, PATIENTS, TOOLS
from medspot.synth.slices import PRESETS, SERIES
from medspot.synth.state import ScreenState
from medspot.synth.themes import Theme

__all__ = ["WORKFLOWS", "PlannedStep", "PlannedTask", "initial_state", "plan_task"]


@dataclass(frozen=True, slots=True)
class PlannedStep:
    state: ScreenState  # the screen this step is shown on
    widget: str  # id of the target widget
    action: str  # click, double_click, drag, type, hover
    instruction: str
    target: str  # the annotation's free-text target


@dataclass(frozen=True, slots=True)
class PlannedTask:
    workflow: str
    overview: str
    steps: tuple[PlannedStep, ...]


def _bare(label: str) -> str:
    return label.removesuffix("...")


def _snake(label: str) -> str:
    out = "".join(ch.lower() if ch.isalnum() else "_" for ch in _bare(label))
    return "_".join(p for p in out.split("_") if p)


class _Plan:
    """Builds a task step by step; `state` is the screen of the next step."""

    def __init__(self, rng: random.Random, theme: Theme, state: ScreenState) -> None:
        self.rng, self.theme, self.state = rng, theme, state
        self.steps: list[PlannedStep] = []

    def say(self, *templates: str, **fields: str) -> str:
        return self.rng.choice(templates).format(**fields)

    def step(self, widget: str, instruction: str, target: str, then: ScreenState,
             action: str = "click") -> None:  # fmt: skip
        self.steps.append(PlannedStep(self.state, widget, action, instruction, target))
        self.state = then

    @property
    def side(self) -> str:
        return self.theme.panel_side

    # -- reusable moves -------------------------------------------------------------------
    def open_menu(self, menu: str) -> None:
        ins = self.say(
            "Click on the {m} menu in the top toolbar.",
            "Click on the '{m}' menu.",
            "Open the '{m}' menu from the menu bar.",
            "Click '{m}' in the top menu bar.",
            m=menu,
        )
        self.step(f"menu:{menu}", ins, f"{menu.lower()}_menu", replace(self.state, menu=menu))

    def open_submenu(self, menu: str, item: str) -> None:
        ins = self.say(
            "Hover over '{i}' in the {m} menu to open the submenu.",
            "Click on '{i}' in the dropdown.",
            "Select '{i}' from the dropdown menu.",
            i=item,
            m=menu,
        )
        self.step(f"item:{menu}/{item}", ins, f"{_snake(item)}_submenu",
                  replace(self.state, submenu=item))  # fmt: skip

    def choose(self, prefix: str, item: str, then: ScreenState, where: str = "dropdown") -> None:
        ins = self.say(
            "Select '{i}' from the {w}.",
            "Click on '{i}'.",
            "Choose '{i}' from the {w}.",
            "Click on the '{i}' option in the {w}.",
            i=_bare(item),
            w=where,
        )
        self.step(f"{prefix}/{item}", ins, f"{_snake(item)}_option", then)

    def tool(self, tool: str, then: ScreenState) -> None:
        label = dict(TOOLS)[tool]
        ins = self.say(
            "Click on the {t} icon in the top toolbar.",
            "Click the '{t}' button in the toolbar.",
            "Select the {t} tool from the toolbar.",
            t=label,
        )
        self.step(f"tool:{tool}", ins, f"{_snake(label)}_icon", then)

    def button(self, dialog: str, label: str, then: ScreenState, why: str = "") -> None:
        ins = self.say(
            "Click on the '{b}' button{w}.",
            "Click '{b}'{w}.",
            "Press the {b} button in the dialog{w}.",
            b=label,
            w=why,
        )
        self.step(f"dlg:{dialog}/button:{label}", ins, f"{_snake(label)}_button", then)

    def check(self, dialog: str, label: str) -> None:
        ins = self.say(
            "Check the '{c}' checkbox.",
            "Tick '{c}' in the dialog.",
            "Enable the '{c}' option.",
            c=label,
        )
        then = replace(self.state, checks=(*self.state.checks, label))
        self.step(f"dlg:{dialog}/check:{label}", ins, f"{_snake(label)}_checkbox", then)

    def type_into(self, dialog: str, field: str, value: str) -> None:
        ins = self.say(
            "Type '{v}' in the {f} field.",
            "Enter '{v}' into the {f} text field.",
            v=value,
            f=field,
        )
        self.step(f"dlg:{dialog}/field:{field}", ins, f"{_snake(field)}_field",
                  replace(self.state, typed=value), action="type")  # fmt: skip


Workflow = Callable[[_Plan], str]  # builds the steps, returns the task overview


def _open_study(p: _Plan) -> str:
    f = p.rng.choice(FILES)
    if p.rng.random() < 0.5:
        p.open_menu("File")
        p.choose("item:File", "Open Study...", replace(p.state, menu=None, dialog="open"))
    else:
        p.tool("open", replace(p.state, dialog="open"))
    if p.rng.random() < 0.4:
        ins = p.say("Double-click '{f}' to open it.", "Double-click on the file '{f}'.", f=f)
        p.step(f"dlg:open/row:{f}", ins, "study_file", p.state, action="double_click")
    else:
        ins = p.say("Select '{f}' from the file list.", "Click on the file '{f}'.", f=f)
        p.step(f"dlg:open/row:{f}", ins, "study_file", replace(p.state, selected=f))
        p.button("open", "Open", p.state, " to load the study")
    return p.say("Open the study {f}.", "Load the DICOM file {f} into the viewer.", f=f)


def _view_choice(
    p: _Plan, submenu: str, tool: str, value: str, done: ScreenState, dropdown: str = ""
) -> None:
    """Choose `value` in the View menu's `submenu` or, half of the time, in the dropdown of the
    toolbar button `tool` (`dropdown`: how a step names it; default "<tool> dropdown")."""
    if p.rng.random() < 0.5:
        p.open_menu("View")
        p.open_submenu("View", submenu)
        p.choose(f"item:View/{submenu}", value, done, "submenu")
    else:
        p.tool(tool, replace(p.state, menu=f"@{tool}"))
        p.choose(f"item:@{tool}", value, done, dropdown or f"{tool} dropdown")


def _layout(p: _Plan) -> str:
    lay = p.rng.choice([x for x in LAYOUTS if x != p.state.layout])
    done = replace(p.state, layout=lay, menu=None, submenu=None)
    _view_choice(p, "Layout", "layout", lay, done)
    return p.say("Change the viewport layout to {l}.", "Display the images in a {l} grid.", l=lay)


def _preset(p: _Plan) -> str:
    pre = p.rng.choice([x for x in PRESETS if x != p.state.preset])
    done = replace(p.state, preset=pre, menu=None, submenu=None)
    _view_choice(p, "Window/Level", "wl", pre, done, "preset dropdown")
    return p.say("Apply the {x} window/level preset.", "Set the window to the {x} preset.", x=pre)


def _wl_dialog(p: _Plan) -> str:
    pre = p.rng.choice(list(PRESETS))
    p.open_menu("Tools")
    p.choose("item:Tools", "Window/Level Settings...", replace(p.state, menu=None, dialog="wl"))
    ins = p.say(
        "Select the '{x}' preset in the list.", "Click on '{x}' in the presets list.", x=pre
    )
    p.step(f"dlg:wl/row:{pre}", ins, f"{pre.lower()}_preset", replace(p.state, selected=pre))
    if p.rng.random() < 0.6:
        ins = p.say("Drag the Width slider to the right to widen the window.",
                    "Drag the window width slider handle to increase the width.")  # fmt: skip
        p.step("dlg:wl/slider:Width", ins, "width_slider", replace(p.state, slider=0.8), "drag")
    p.button("wl", "OK", p.state, " to apply the settings")
    return p.say("Adjust window/level with the {x} preset in the settings dialog.", x=pre)


def _lesion(p: _Plan, mark: str) -> None:
    if mark == "distance":
        ins = p.say("Drag across the lesion in the viewport to measure its diameter.",
                    "Drag the ruler across the bright lesion in the image.")  # fmt: skip
        p.step("region:lesion", ins, "lesion_measurement", p.state, action="drag")
    else:
        ins = p.say("Click on the lesion in the image to place the label.",
                    "Click on the bright lesion in the viewport.")  # fmt: skip
        p.step("region:lesion", ins, "lesion_annotation", p.state)


def _pick_tool(p: _Plan, tool: str, submenu: str, item: str) -> None:
    """Pick the tool `tool` on the toolbar or, half of the time, as `item` in the Tools menu's
    `submenu`."""
    if p.rng.random() < 0.5:
        p.tool(tool, replace(p.state, tool=tool))
    else:
        p.open_menu("Tools")
        p.open_submenu("Tools", submenu)
        done = replace(p.state, menu=None, submenu=None, tool=tool)
        p.choose(f"item:Tools/{submenu}", item, done, "submenu")


def _measure(p: _Plan) -> str:
    _pick_tool(p, "measure", "Measure", "Distance")
    _lesion(p, "distance")
    return p.say("Measure the diameter of the lesion.", "Measure a distance across the lesion.")


def _annotate(p: _Plan) -> str:
    _pick_tool(p, "annotate", "Annotate", "Text Label")
    _lesion(p, "label")
    return p.say("Annotate the lesion with a text label.", "Add a text annotation to the lesion.")


def _export(p: _Plan) -> str:
    name = p.rng.choice(["chest_export", "lesion_view", "report_fig1", "study_snapshot"])
    if p.rng.random() < 0.5:
        p.open_menu("File")
        p.open_submenu("File", "Export")
        p.choose("item:File/Export", "Screenshot (PNG)...",
                 replace(p.state, menu=None, submenu=None, dialog="export"), "submenu")  # fmt: skip
    else:
        p.tool("export", replace(p.state, dialog="export"))
        p.check("export", p.rng.choice(["PNG", "JPEG"]))
        p.type_into("export", "File name", name)
    if p.rng.random() < 0.5:
        p.check("export", "Include annotations")
    p.button("export", "Export", p.state, " to save the image")
    return p.say("Export a screenshot of the current view.", "Export the image as {n}.", n=name)


def _anonymise(p: _Plan) -> str:
    if p.rng.random() < 0.5:
        p.open_menu("File")
        p.choose("item:File", "Anonymise...", replace(p.state, menu=None, dialog="anonymise"))
    else:
        p.tool("anonymise", replace(p.state, dialog="anonymise"))
    p.check("anonymise", p.rng.choice(["Remove patient name", "Remove birth date"]))
    if p.rng.random() < 0.5:
        p.type_into("anonymise", "New patient ID", f"ANON-{p.rng.randrange(100, 999)}")
    p.button("anonymise", "Anonymise", p.state)
    return p.say("Anonymise the current study.", "Remove identifying data from the study.")


def _series(p: _Plan) -> str:
    k = p.rng.choice([i for i in range(len(SERIES)) if i != p.state.series])
    label = SERIES[k].label
    if p.state.panel_tab != "Series":
        ins = p.say("Click on the 'Series' tab in the {s} panel.", "Open the Series tab.",
                    s=p.side)  # fmt: skip
        p.step("tab:panel/Series", ins, "series_tab", replace(p.state, panel_tab="Series"))
    ins = p.say("Double-click the '{x}' thumbnail in the {s} panel.",
                "Double-click on the series '{x}' to display it.", x=label, s=p.side)  # fmt: skip
    p.step(f"thumb:series/{k}", ins, "series_thumbnail", p.state, action="double_click")
    return p.say("Change the displayed series to {x}.", "Switch to series {x}.", x=label)


def _patient(p: _Plan) -> str:
    k = p.rng.choice([i for i in range(len(PATIENTS)) if i != p.state.patient])
    name = PATIENTS[k][0]
    if p.state.panel_tab != "Patients":
        p.step("tab:panel/Patients", p.say("Click on the 'Patients' tab."), "patients_tab",
               replace(p.state, panel_tab="Patients"))  # fmt: skip
    ins = p.say("Select patient '{n}' from the patient list in the {s} panel.",
                "Click on '{n}' in the patient list.", n=name, s=p.side)  # fmt: skip
    p.step(f"row:patient/{k}", ins, "patient_row", replace(p.state, patient=k))
    return p.say("Open the study of patient {n}.", "Select the patient {n}.", n=name)


def _settings(p: _Plan) -> str:
    tab = p.rng.choice(["Units", "Display"])
    box = p.rng.choice(MEASURE_TABS[tab])
    p.open_menu("Tools")
    p.choose("item:Tools", "Measurement Settings...",
             replace(p.state, menu=None, dialog="measure"))  # fmt: skip
    ins = p.say("Click on the '{t}' tab in the dialog.", "Open the {t} tab.", t=tab)
    p.step(f"dlg:measure/tab:{tab}", ins, f"{tab.lower()}_tab", replace(p.state, dialog_tab=tab))
    p.check("measure", box)
    p.button("measure", "OK", p.state)
    return p.say("Change the measurement settings: enable {b}.", b=box)


def _updates(p: _Plan) -> str:
    p.open_menu("Help")
    p.choose("item:Help", "Check for Updates...", replace(p.state, menu=None, dialog="updates"))
    if p.rng.random() < 0.5:
        p.button("updates", "OK", p.state, " to close the message")
    else:
        ins = p.say("Close the message with the X button in the dialog's title bar.",
                    "Click the close (X) icon of the Check for Updates window.")  # fmt: skip
        p.step("dlg:updates/close", ins, "close_dialog_icon", p.state)
    return "Check for software updates."


def _image_op(p: _Plan) -> str:
    op = p.rng.choice(["Rotate Clockwise", "Flip Horizontal", "Flip Vertical", "Invert Colours"])
    p.open_menu("Image")
    p.choose("item:Image", op, replace(p.state, menu=None))
    return f"{op} the displayed image."


def _hover(p: _Plan) -> str:
    tool, label = p.rng.choice(TOOLS)
    ins = p.say("Hover over the {t} icon in the toolbar to see its tooltip.",
                "Hover over the '{t}' tool in the top toolbar.", t=label)  # fmt: skip
    p.step(f"tool:{tool}", ins, f"{_snake(label)}_icon", p.state, action="hover")
    return f"Show the tooltip of the {label} tool."


WORKFLOWS: dict[str, Workflow] = {
    "open_study": _open_study,
    "change_layout": _layout,
    "wl_preset": _preset,
    "wl_dialog": _wl_dialog,
    "measure_distance": _measure,
    "annotate": _annotate,
    "export_screenshot": _export,
    "anonymise": _anonymise,
    "change_series": _series,
    "select_patient": _patient,
    "measurement_settings": _settings,
    "check_updates": _updates,
    "image_operation": _image_op,
    "hover_tooltip": _hover,
}


def initial_state(rng: random.Random) -> ScreenState:
    return ScreenState(
        patient=rng.randrange(len(PATIENTS)),
        series=rng.randrange(len(SERIES)),
        layout=rng.choice(LAYOUTS[:3]),
        preset=rng.choice(list(PRESETS)),
        panel_tab=rng.choice(["Patients", "Series"]),
    )


def plan_task(workflow: str, rng: random.Random, theme: Theme, start: ScreenState) -> PlannedTask:
    """Plan one task of `workflow` from the screen `start` (1 to 5 steps)."""
    p = _Plan(rng, theme, start)
    overview = WORKFLOWS[workflow](p)
    return PlannedTask(workflow, overview, tuple(p.steps))
