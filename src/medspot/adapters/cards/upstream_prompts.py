"""The MedSPOT authors' prompt strings, quoted exactly from `Tajamul21/MedSPOT`
`Evaluation_scripts/evaluate_<model>.py` (commit ad61552). W and H are the original screenshot's
width and height, as the scripts read them from the image they opened.
"""

from __future__ import annotations

__all__ = [
    "AGUVIS_SYSTEM",
    "GUI_ACTOR_SYSTEM",
    "cogagent",
    "deepseek",
    "gemma3",
    "gpt",
    "llama",
    "mistral",
    "osatlas",
    "qwen2_5vl",
    "qwen2vl",
    "qwen3vl",
    "seeclick",
    "tars",
    "uground",
]


def gpt(instruction: str, w: int, h: int) -> str:
    """evaluate_gpt4omini.py and evaluate_gpt5.py (identical)."""
    return (
        f"{instruction}\n"
        f"Image resolution: width={w}, height={h}.\n"
        f"Click the correct UI element.\n"
        f"Return ONLY integer pixel coordinates as (x,y) "
        f"where x is in [0,{w}] and y is in [0,{h}]. No explanation."
    )


def tars(instruction: str) -> str:
    """evaluate_tars.py (UI-TARS 1.5 and 7B-SFT)."""
    return (
        f"{instruction}\n"
        "Look at the image and click the correct UI element. "
        "Respond ONLY with the click location in the format (x,y) "
        "using pixel coordinates."
    )


def uground(instruction: str) -> str:
    """evaluate_uground.py (single newlines, unlike UGround's README)."""
    return (
        f"Your task is to help the user identify the precise coordinates (x, y) "
        f"of a specific area/element/object on the screen based on a description.\n"
        f"- Your response should aim to point to the center or a representative point "
        f"within the described area/element/object as accurately as possible.\n"
        f"- If the description is unclear or ambiguous, infer the most relevant area "
        f"or element based on its likely context or purpose.\n"
        f"- Your answer should be a single string (x, y) corresponding to the point "
        f"of the interest.\n"
        f"Description: {instruction}\n"
        f"Answer:"
    )


def qwen2_5vl(instruction: str) -> str:
    """evaluate_qwen2_5vl.py."""
    return instruction + "\nRespond ONLY with (x,y) pixel coordinates."


def qwen2vl(instruction: str, w: int, h: int) -> str:
    """evaluate_qwen2vl.py."""
    return (
        f"{instruction}\n\n"
        f"The image is {w}x{h} pixels.\n"
        "Look carefully and identify the exact UI element described.\n"
        "Return the pixel coordinates of the CENTER of that element.\n"
        "Format strictly: (x,y)\n"
        "Do NOT return the image center. Do NOT explain."
    )


def qwen3vl(instruction: str) -> str:
    """evaluate_qwen3vl0.py."""
    return (
        f"{instruction}\n"
        "Look at the image and click the correct UI element. "
        "Respond ONLY with the click location in the format (x,y)."
    )


def osatlas(instruction: str) -> str:
    """evaluate_osatlas.py ("(with point)")."""
    return (
        f"In this UI screenshot, what is the position of the element "
        f'corresponding to the command "{instruction}" (with point)?'
    )


def seeclick(instruction: str) -> str:
    """evaluate_seeclick.py (SeeClick's official prompt)."""
    return (
        "In this UI screenshot, what is the position of the element "
        f'corresponding to the command "{instruction}" (with point)?'
    )


def cogagent(instruction: str) -> str:
    """evaluate_cogagent.py: no History line, one line."""
    return f"Task: {instruction} (Platform: WIN) (Answer in Action-Operation-Sensitive format.)"


def deepseek(instruction: str) -> str:
    """evaluate_deepseek.py (the script puts `<image>\\n` before it in the conversation)."""
    return (
        f"{instruction}\n\n"
        "Look carefully at the screenshot and locate the UI element.\n"
        "Return ONLY the normalized coordinates (x,y) where x and y are between 0 and 1.\n"
        "Format strictly: (x,y)\n"
        "Do NOT explain."
    )


def gemma3(instruction: str) -> str:
    """evaluate_gemma3_27B.py."""
    return (
        f"{instruction}\n"
        "Click anywhere inside the correct UI element's bounding box. "
        "The click does NOT need to be centered. "
        "Respond ONLY with the click location in format (x,y)."
    )


def llama(instruction: str) -> str:
    """evaluate_llama.py."""
    return (
        f"{instruction}\n\n"
        "Return ONLY a single coordinate pair.\n"
        "Output format must be exactly:\n"
        "(x,y)\n\n"
        "Do NOT explain.\n"
        "Do NOT describe.\n"
        "Do NOT output text.\n"
        "If unsure, guess.\n"
        "Your entire response must be only two numbers inside parentheses."
    )


def mistral(instruction: str, w: int, h: int) -> str:
    """evaluate_mistral.py."""
    return (
        f"{instruction}\n\n"
        f"The image is {w}x{h} pixels.\n"
        "Look carefully at the image and identify the exact UI element described.\n"
        "Return the pixel coordinates of the CENTER of that UI element.\n"
        "Format strictly: (x,y)\n"
        "Do NOT return the image center. Do NOT explain."
    )


# evaluate_Aguvis.py: the grounding system message, the raw instruction as the user text.
AGUVIS_SYSTEM = (
    "You are a GUI agent. You are given a task and a screenshot of the screen. "
    "You need to perform a series of pyautogui actions to complete the task."
)

# evaluate_gui_actor.py: a non-official system prompt, the raw instruction as the user text.
GUI_ACTOR_SYSTEM = (
    "You are a GUI agent. Locate the UI element described by the instruction and click inside it."
)
