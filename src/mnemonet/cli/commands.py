"""What one line typed at the CLI means: an observation, a question, or a slash command (pure, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass

from mnemonet.model.records import check_name
from mnemonet.model.secrets import check_no_secrets


@dataclass(frozen=True)
class CommandSpec:
    """A slash command: its name, its argument (if any; in brackets when optional) and one line of help."""

    name: str
    arg: str
    help: str


COMMANDS: dict[str, CommandSpec] = {
    spec.name: spec
    for spec in (
        CommandSpec("observe", "TEXT", "store TEXT as an observation, even when it reads as a question"),
        CommandSpec("claim", "TEXT", "assert a claim as the current source (\"A contradicts B\" links two statements)"),
        CommandSpec("retract", "ID REASON", "take a statement or observation back (short ids as printed), saying why"),
        CommandSpec("brief", "[SUBJECT]", "what a new session should know about SUBJECT (or the team): current "
                    "facts, open conflicts, most used concepts"),
        CommandSpec("recent", "", "the newest observations and statements"),
        CommandSpec("contradictions", "", "open contradictions, both sides with confidence and source"),
        CommandSpec("concept", "NAME", "statements about a concept, superseded ones marked"),
        CommandSpec("peers", "", "members of the network: capabilities and state"),
        CommandSpec("stats", "", "counts of the store and the active language model"),
        CommandSpec("settle", "[SECONDS]", "wait until the workers have done all the work of this space "
                    "(extraction, inference, validation, consolidation), at most SECONDS"),
        CommandSpec("source", "NAME", "speak as another source from now on (default: user)"),
        CommandSpec("space", "NAME", "work in another memory space from now on, created if new (default: default)"),
        CommandSpec("spaces", "", "the memory spaces of the network, and which spaces each reads"),
        CommandSpec("share", "SPACE", "let the current space read SPACE too: read-only, answers name the space"),
        CommandSpec("unshare", "SPACE", "stop the current space reading SPACE"),
        CommandSpec("help", "", "this list"),
        CommandSpec("quit", "", "leave the network and exit (also Ctrl-D, Ctrl-C)"),
    )
}


@dataclass(frozen=True)
class Command:
    """One parsed line: ``name`` is ``observe``, ``remember`` or a slash command's name.

    ``note`` is a line to show first: why a line was read the way it was.
    """

    name: str
    arg: str = ""
    note: str = ""


_WH = frozenset({"what", "where", "when", "who", "whom", "whose", "why", "how", "which"})
_AUX = frozenset({"is", "are", "was", "were", "am", "do", "does", "did", "can", "could", "should", "will", "would",
                  "has", "have", "had", "may", "might", "must", "shall", "'s"})
QUESTION_NOTE = "(read as a question, nothing stored; to store it as an observation: /observe TEXT)"


def reads_as_question(text: str) -> bool:
    """True for a line that opens like a question ("what is ...", "where does ...", "how many ...").

    Storing a question as an observation puts it into the memory for good, so such a line is asked;
    only a question word followed by a verb or quantity counts ("what we decided: ..." is a statement).
    """
    words = text.lower().replace("’", "'").replace("'s ", " 's ").split()
    return len(words) >= 2 and words[0] in _WH and (words[1] in _AUX or words[:2] in (["how", "many"], ["how", "much"]))


def parse_line(line: str, max_chars: int, max_name_chars: int) -> Command | None:
    """The command a line asks for; ``None`` for a blank line; ``ValueError`` naming what is wrong."""
    if len(line) > max_chars:
        raise ValueError(f"line: longer than {max_chars} characters")
    if any(ord(c) < 32 and c != "\t" for c in line.rstrip("\r\n")):
        raise ValueError("line: must not contain control characters")
    text = line.strip()
    if not text:
        return None
    if text.startswith("?"):
        question = text[1:].strip()
        if not question:
            raise ValueError("question: empty; type a question after '?', e.g. ?what do I prefer")
        return Command("remember", question)
    if not text.startswith("/"):
        if reads_as_question(text):
            return Command("remember", text, QUESTION_NOTE)
        return Command("observe", text)
    name, _, arg = text[1:].partition(" ")
    spec = COMMANDS.get(name.lower())
    if spec is None:
        raise ValueError(f"command: unknown /{name}; /help lists the commands")
    arg = arg.strip()
    if spec.arg and not spec.arg.startswith("[") and not arg:
        raise ValueError(f"{spec.name}: usage /{spec.name} {spec.arg}")
    if not spec.arg and arg:
        raise ValueError(f"{spec.name}: takes no argument (usage /{spec.name})")
    if spec.arg == "NAME":
        arg = check_name(arg, spec.name, max_name_chars)
        # A name set here is shown in every prompt after it and travels with every write: a secret pasted
        # as one is refused (SecretRefused, so the session drops the line from the history) before any use.
        check_no_secrets(arg, spec.name)
    return Command(spec.name, arg)
