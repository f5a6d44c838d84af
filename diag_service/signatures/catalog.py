"""Signature catalog: YAML schema, validation at load, and matching.

A signature file holds ``signatures`` (and optionally ``tables``)::

    version: 1
    signatures:
      - id: cuda_oom                      # unique across all files
        name: CUDA out of memory
        patterns: ['CUDA out of memory', 'OutOfMemoryError']   # Python regexes; any one matches
        context_patterns: []              # optional: one must also match the event's other lines
        kinds: []                         # optional: restrict to event kinds (traceback, nccl, ...)
        failure_mode: fail_stop
        category: gpu_oom
        responsible: user                 # optional; defaults per category
        role: root                        # root | symptom | summary | context
        priority: 70                      # 0-100; higher wins among competing roots
        confidence: 0.9                   # 0-1; how decisive on its own
        explanation: ...
        source: https://...               # vendor doc or public thread
        lookup: {group: code, table: xid} # optional: per-value overrides from a table
        cascade: silent_death             # optional: silent_death | peer_loss | precursor | slows (SignatureSpec.cascade)
        cascade_name: "'{message}'"       # optional: its name in another cause's cascade (see SignatureSpec)
        examples: ['RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB']
        counter_examples: []              # lines that must not match
    tables:
      xid:
        "79": {name: ..., category: gpu_hardware, priority: 95, explanation: ...}
    context_rules:                        # optional: refine a signature's answer by what surrounds the match
      - id: enospc_dev_shm
        refines: [no_space_left]          # signature ids (any file)
        any_line: ['/dev/shm']            # one must match a line of the event (traceback lines included)
        none_line: []                     # none may match
        frames: null                      # user | framework | not_user: where the traceback's innermost frame is
                                          # (not_user: a framework frame, or no frame in the excerpt); library:
                                          # the innermost frame outside torch and the standard library is a
                                          # library's (a library called torch with the tensors, not the job)
        name: No space left on /dev/shm   # the rest overrides the signature's fields
        category: infrastructure
        explanation: ...
        examples: ["RuntimeError: unable to write to file </torch_1_2>: No space left on device (28)"]
        counter_examples: []              # event texts (lines joined by newlines) that must not fire it
        cascade_name: null                # optional: as a signature's (default: the rule's name)

A context rule fires when its signature matched the event and its conditions hold; the first rule
(in file order) that fires replaces the fields it sets, and its id is reported in the hit's
``details['context_rule']``. Each example must be matched by the refined signature and fire the
rule; no counter-example may fire it.

Loading validates every field with pydantic, compiles every regex, checks ids are unique and that
every example matches and no counter-example does; any failure raises :class:`SignatureError`
naming the file and signature.
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from diag_service import recache
from diag_service.contracts import RawEvent, TemplateGroup
from diag_service.domain import (
    Category,
    EventKind,
    EventRole,
    FailureMode,
    Responsible,
    SignatureHit,
)
from diag_service.errors import DiagError, ErrorKind
from diag_service.logformat import FRAME_LINE, iso
from diag_service.resources import builtin
from diag_service.yamlio import load_yaml_model


class SignatureError(DiagError):
    """A signature file is malformed, a regex does not compile, or an example does not match."""

    kind = ErrorKind.CONFIG


def _re(pattern: str) -> re.Pattern[str]:
    """``re.compile(pattern)``, through the per-machine cache of compiled regex code (:mod:`diag_service.recache`):
    the catalogue's ~800 patterns cost ~0.1 CPU-s to compile on every cold start."""
    return recache.shared().compile(pattern)


def _compiled_ok(patterns: list[str]) -> list[str]:
    """``patterns`` unchanged when every one compiles; ValueError naming the first that does not."""
    for p in patterns:
        try:
            _re(p)
        except re.error as exc:
            raise ValueError(f"regex {p!r} does not compile: {exc}") from exc
    return patterns


#: Fields a lookup entry or a context rule may override in a signature's hit.
_OVERRIDABLE = ("category", "failure_mode", "role", "priority", "confidence", "source")


def _override(fields: dict, entry: BaseModel) -> None:
    for k in _OVERRIDABLE:
        v = getattr(entry, k)
        if v is not None:
            fields[k] = v


class LookupEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    category: Category | None = None
    failure_mode: FailureMode | None = None
    role: EventRole | None = None
    priority: int | None = Field(default=None, ge=0, le=100)
    confidence: float | None = Field(default=None, ge=0, le=1)
    explanation: str
    source: str | None = None


class Lookup(BaseModel):
    model_config = ConfigDict(extra="forbid")

    group: str
    table: str


def _message_only(form: str | None) -> str | None:
    """``form`` when its only format field is ``{message}`` (a ``cascade_name``); raises ValueError otherwise."""
    if form is not None:
        fields = {f for _, f, _, _ in string.Formatter().parse(form) if f is not None}
        if fields - {"message"}:
            raise ValueError(f"cascade_name may only use {{message}}, not {sorted(fields - {'message'})}")
    return form


class SignatureSpec(BaseModel):
    """One known failure signature (see the module docstring for the YAML form)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    name: str
    patterns: list[str] = Field(min_length=1)
    context_patterns: list[str] = Field(default_factory=list)
    kinds: list[EventKind] = Field(default_factory=list)
    failure_mode: FailureMode = FailureMode.FAIL_STOP
    category: Category
    responsible: Responsible | None = None
    role: EventRole = EventRole.ROOT
    priority: int = Field(ge=0, le=100)
    confidence: float = Field(ge=0, le=1)
    explanation: str
    source: str | None = None
    lookup: Lookup | None = None
    examples: list[str] = Field(min_length=1)
    counter_examples: list[str] = Field(default_factory=list)
    #: ``silent_death``: a process killed by a signal (it prints no traceback of its own, and its
    #: launcher reports it only on its next poll); ``peer_loss``: what a rank prints when a peer
    #: vanished (closed by peer, broken pipe, collective timeouts, SIGTERM from the agent). A silent
    #: death is not teardown because peer-loss reports were stamped before it. ``precursor`` (with role
    #: ``context``): a routine message, no failure evidence of its own, that is named as what came before a
    #: failure stamped after it (fp16 loss-scale overflows before the scale reaches its minimum). ``slows``
    #: (with role ``context``): a setting that makes every step slower (autograd anomaly detection, blocking
    #: CUDA launches): when the job slowed down, its category is the slowdown's.
    cascade: str | None = Field(default=None, pattern=r"^(?:silent_death|peer_loss|precursor|slows)$")
    #: The category when the hit is one rank's alone among the two or more ranks the logs show (no context rule
    #: refined it, and no other rank raised it): a cause local to that replica. Data-parallel replicas hold the same
    #: weights and settings, so a loss that turns NaN on one of them alone came from that replica's own batch; on
    #: every rank, or on no named rank, the message does not tell data from the learning rate or the precision.
    one_rank_category: Category | None = None
    #: How a hit is named when it is listed in another cause's cascade (default: ``name``); ``{message}``
    #: stands for the first line it matched, shortened. For catch-all signatures, whose name ("Unclassified
    #: RuntimeError in the job") describes the catalog's ignorance, not the line.
    cascade_name: str | None = None

    @field_validator("patterns", "context_patterns")
    @classmethod
    def _compiles(cls, v: list[str]) -> list[str]:
        return _compiled_ok(v)

    @field_validator("cascade_name")
    @classmethod
    def _only_message(cls, v: str | None) -> str | None:
        return _message_only(v)

    @field_validator("failure_mode")
    @classmethod
    def _a_failure(cls, v: FailureMode) -> FailureMode:
        if v is FailureMode.NONE:
            raise ValueError("a signature describes a failure: 'none' is only a diagnosis's verdict")
        return v


# a warning that reports an error it caught ("... Error: CUDA out of memory ...", FSDP's state_dict clone): the text after
# the marker is the failure's own message
_CAUGHT_ERROR = re.compile(r"\b(?:Error|Exception|error was|failed with)[:=] ")
_SITE_FRAME = re.compile(r'File "[^"]*(?:site-packages|dist-packages)')
#: The Python standard library (``/usr/lib/python3.10/os.py``, ``<frozen importlib._bootstrap>``): not an
#: owner of its own; a call into ``os.makedirs`` belongs to whoever called it.
_STDLIB_FRAME = re.compile(r'File "(?:<frozen |[^"]*/lib/python\d[\d.]*/(?!site-packages/|dist-packages/))')
#: Training frameworks and libraries often run from a source checkout (``/workspace/Megatron-LM/megatron/``,
#: ``pip install -e``) rather than from site-packages; a frame inside one of their package directories is
#: the framework's code, not the job's. Import names of the frameworks the launchers in ``logformat`` serve.
FRAMEWORK_PACKAGES = (
    "torch", "deepspeed", "megatron", "transformers", "accelerate", "peft", "trl", "verl", "nemo", "nemo_rl",
    "lightning", "pytorch_lightning", "lightning_fabric", "colossalai", "fairseq", "fairscale", "apex",
    "torchtitan", "torchtune", "composer", "llmfoundry", "openrlhf", "vllm", "sglang", "ray", "horovod",
    "llamafactory", "swift", "xtuner", "mmengine", "datasets", "flash_attn", "triton", "bitsandbytes",
    "transformer_engine",
)
_PACKAGE_FRAME = re.compile(r'File "(?:[^"]*/)?(?:' + "|".join(FRAMEWORK_PACKAGES) + r')/[^"]*\.py"')


def _library_frame(line: str) -> bool:
    """A ``File "...", line N`` frame line inside site-packages, dist-packages or a :data:`FRAMEWORK_PACKAGES`
    directory."""
    return bool(_SITE_FRAME.search(line) or _PACKAGE_FRAME.search(line))


def frame_file_owner(path: str) -> str:
    """``stdlib``, ``framework`` or ``user`` for the file of one traceback frame, by the rules of
    :func:`innermost_frame_owner` (standard library: ``<frozen ...>`` or under ``lib/pythonX.Y/`` outside
    site-packages; framework: site-packages, dist-packages or a :data:`FRAMEWORK_PACKAGES` directory)."""
    line = f'File "{path}"'
    if _STDLIB_FRAME.search(line):
        return "stdlib"
    return "framework" if _library_frame(line) else "user"


#: Python's attribute and item hooks: an exception a library raises inside one is the caller's request for something
#: the object does not have (torch's ``Module.__getattr__`` raising AttributeError for ``model.encoder`` on a DDP
#: wrapper), so the frame that called it is the one that erred (Python data model, "Customizing attribute access").
_ACCESS_HOOK = re.compile(r", in (?:__getattr__|__getattribute__|__getitem__|__missing__)\s*$")
#: A library's pass-through wrapper whose own line is the innermost frame (accelerate's scheduler ``step``:
#: ``self.scheduler.step(*args, **kwargs)``): the call it forwards failed as it was made (Python binds the arguments
#: before the callee's first line: "missing 1 required positional argument"), so the caller that chose the
#: arguments is the frame that erred (Python language reference, "Calls").
_FORWARDING_CALL = re.compile(r"^\s*(?:return\s+)?[\w.\[\]'\"]+\(\*\w+, \*\*\w+\)\s*$")


def innermost_frame_owner(lines: list[str]) -> str | None:
    """``user`` or ``framework`` for the innermost ``File "...", line N`` frame of a traceback's lines that
    is not the Python standard library's (framework: under site-packages or dist-packages, or inside a
    package directory of :data:`FRAMEWORK_PACKAGES`; a traceback of standard-library frames only is
    ``framework``); None without frames. An innermost library frame inside an attribute or item hook
    (:data:`_ACCESS_HOOK`), or whose line forwards ``*args, **kwargs`` (:data:`_FORWARDING_CALL`), stands for its
    caller."""
    last = None
    caller = None
    stdlib = False
    code_of_last: str | None = None
    for i, line in enumerate(lines):
        if FRAME_LINE.match(line):
            if _STDLIB_FRAME.search(line):
                stdlib = True
            else:
                caller, last = last, line
                code_of_last = lines[i + 1] if i + 1 < len(lines) else None
    if last is not None and caller is not None and _library_frame(last) and (
            _ACCESS_HOOK.search(last) or (code_of_last is not None and _FORWARDING_CALL.match(code_of_last))):
        # a library's hook refusing the caller's request, or its wrapper forwarding the caller's arguments to a call
        # that failed to bind them; a job's own __getitem__ or wrapper stays the job's
        last = caller
    if last is None:
        return "framework" if stdlib else None
    return "framework" if _library_frame(last) else "user"


_TORCH_FRAME = re.compile(r'File "(?:[^"]*/)?torch/[^"]*\.py"')


def torch_caller_owner(lines: list[str]) -> str | None:
    """``user`` or ``framework`` for the innermost frame of a traceback's lines that is neither the standard library's
    nor torch's own (torch's operators are what every library and job calls; the frame that called them chose the
    tensors): ``framework`` when that frame is a library's (:func:`frame_file_owner`), ``user`` when it is the job's;
    None without such a frame."""
    last = None
    for line in lines:
        if FRAME_LINE.match(line) and not _STDLIB_FRAME.search(line) and not _TORCH_FRAME.search(line):
            last = line
    if last is None:
        return None
    return "framework" if _library_frame(last) else "user"


class ContextRule(BaseModel):
    """Refines a signature's answer by what surrounds its match (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    refines: list[str] = Field(min_length=1)
    any_line: list[str] = Field(default_factory=list)
    none_line: list[str] = Field(default_factory=list)
    frames: str | None = Field(default=None, pattern=r"^(?:user|framework|not_user|library)$")
    name: str
    category: Category | None = None
    failure_mode: FailureMode | None = None
    role: EventRole | None = None
    priority: int | None = Field(default=None, ge=0, le=100)
    confidence: float | None = Field(default=None, ge=0, le=1)
    explanation: str
    source: str | None = None
    examples: list[str] = Field(min_length=1)
    counter_examples: list[str] = Field(default_factory=list)
    #: As :attr:`SignatureSpec.cascade_name`; without it a refined hit is named by the rule's ``name``.
    cascade_name: str | None = None

    @field_validator("any_line", "none_line")
    @classmethod
    def _compiles(cls, v: list[str]) -> list[str]:
        return _compiled_ok(v)

    @field_validator("cascade_name")
    @classmethod
    def _only_message(cls, v: str | None) -> str | None:
        return _message_only(v)


@dataclass
class _Rule:
    spec: ContextRule
    any_line: list[re.Pattern[str]]
    none_line: list[re.Pattern[str]]

    def fires(self, lines: list[str]) -> bool:
        if self.any_line and not any(p.search(line) for p in self.any_line for line in lines):
            return False
        if any(p.search(line) for p in self.none_line for line in lines):
            return False
        if self.spec.frames is None:
            return True
        if self.spec.frames == "library":
            return torch_caller_owner(lines) == "framework"
        owner = innermost_frame_owner(lines)
        return owner != "user" if self.spec.frames == "not_user" else owner == self.spec.frames


class SignatureFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    signatures: list[SignatureSpec] = Field(default_factory=list)
    tables: dict[str, dict[str, LookupEntry]] = Field(default_factory=dict)
    context_rules: list[ContextRule] = Field(default_factory=list)


@dataclass
class _Compiled:
    spec: SignatureSpec
    patterns: list[re.Pattern[str]]
    context: list[re.Pattern[str]]

    def search(self, key: str) -> re.Match[str] | None:
        for p in self.patterns:
            m = p.search(key)
            if m:
                return m
        return None


@dataclass
class SignatureSet:
    """Validated, compiled signatures. ``version`` is a content hash for provenance."""

    signatures: list[_Compiled]
    tables: dict[str, dict[str, LookupEntry]]
    version: str
    rules: dict[str, list[_Rule]] = field(default_factory=dict)
    any_pattern: re.Pattern[str] = field(init=False)
    _prefilter: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._prefilter = tuple(_anonymous(p.pattern) for c in self.signatures for p in c.patterns)
        self.any_pattern = _re("|".join(self._prefilter))

    def __len__(self) -> int:
        return len(self.signatures)

    def prefilter_patterns(self) -> tuple[str, ...]:
        """Every signature pattern with named groups unnamed and flags made local (for the extractor)."""
        return self._prefilter

    def rule_by_id(self, sid: str, rule_id: str) -> ContextRule | None:
        """The context rule ``rule_id`` that refines signature ``sid``, or None."""
        return next((r.spec for r in self.rules.get(sid, []) if r.spec.id == rule_id), None)

    def by_id(self, sid: str) -> SignatureSpec:
        for c in self.signatures:
            if c.spec.id == sid:
                return c.spec
        raise KeyError(sid)


def _anonymous(pattern: str) -> str:
    """A pattern fit for one big alternation: groups unnamed, leading global flags made local."""
    pattern = re.sub(r"\(\?P<\w+>", "(?:", pattern)
    m = re.match(r"^\(\?([aiLmsux]+)\)", pattern)
    if m:
        return f"(?{m.group(1)}:{pattern[m.end():]})"
    return f"(?:{pattern})"


def default_signature_dir() -> Path:
    """The built-in ``knowledge_base/signatures`` (:func:`diag_service.resources.builtin`)."""
    return builtin("knowledge_base", "signatures")


#: Environment variable with extra signature folders (``os.pathsep``-separated), read after the built-ins.
SIGNATURES_PATH_ENV = "DIAG_SIGNATURES_PATH"
#: Entry-point group of installable signature packs: each entry point loads to a folder path (or a
#: callable returning one) holding ``*.yaml`` signature files.
SIGNATURE_PACK_GROUP = "diag_service.signatures"


def _pack_dirs() -> list[Path]:
    from importlib.metadata import entry_points

    out: list[Path] = []
    for ep in entry_points(group=SIGNATURE_PACK_GROUP):
        try:
            obj = ep.load()
            out.append(Path(obj() if callable(obj) else obj))
        except Exception as exc:  # noqa: BLE001 - a broken pack is reported, whatever it raised
            raise SignatureError(f"signature pack {ep.name!r} ({ep.value}) does not load: {exc}") from exc
    return out


def signature_search_path(extra: Iterable[str | Path] = ()) -> list[Path]:
    """The folders a default catalogue is read from, in order: the built-ins, then each folder of
    ``$DIAG_SIGNATURES_PATH``, then every installed signature pack (entry-point group
    :data:`SIGNATURE_PACK_GROUP`), then ``extra``. Later folders add signatures; an id defined twice is an
    error, so a site file cannot silently replace a built-in one."""
    dirs = [default_signature_dir()]
    env = os.environ.get(SIGNATURES_PATH_ENV, "")
    dirs += [Path(x).expanduser() for x in env.split(os.pathsep) if x.strip()]
    dirs += _pack_dirs()
    dirs += [Path(x) for x in extra]
    return dirs


def load_signatures(directory: str | Path | None = None, *, extra: Iterable[str | Path] = ()) -> SignatureSet:
    """Load and validate a signature catalogue.

    ``directory``: one folder that is the whole catalogue (tests, ``diag signatures --directory``).
    Without it, every folder of :func:`signature_search_path` (built-ins, ``$DIAG_SIGNATURES_PATH``,
    signature packs, ``extra``; an entry may also name one ``.yaml`` file) is read in order and layered.
    Raises :class:`SignatureError` on the first problem, naming the file and the signature: a missing
    folder, YAML or schema errors, a duplicate id, an example its signature does not match or that the
    extractor's pre-filter would never pass to the signature stage.
    """
    import hashlib

    dirs = [Path(directory)] if directory is not None else signature_search_path(extra)
    builtin_dir = default_signature_dir() if directory is None else Path(directory)
    files: list[Path] = []
    for d in dirs:
        if d.is_file() and d.suffix in (".yaml", ".yml"):  # one site file named directly
            files.append(d)
            continue
        if not d.is_dir():
            raise SignatureError(f"signature folder or .yaml file {d} does not exist")
        files += sorted(d.glob("*.yaml"))
    if not files:
        raise SignatureError(f"no signature files (*.yaml) in {', '.join(map(str, dirs))}")
    compiled: list[_Compiled] = []
    tables: dict[str, dict[str, LookupEntry]] = {}
    seen: dict[str, str] = {}
    rules: list[tuple[str, ContextRule]] = []
    digest = hashlib.sha256()
    for f in files:
        raw = f.read_bytes()
        digest.update(raw)
        # built-in files by name, a site's by path (several folders may hold a "site.yaml")
        label = f.name if f.parent == builtin_dir else str(f)
        parsed, _text, _node = load_yaml_model(f, SignatureFile, SignatureError, name=label, empty={})
        for name, table in parsed.tables.items():
            if name in tables:
                raise SignatureError(f"{label}: table {name!r} defined twice")
            tables[name] = table
        rules += [(label, r) for r in parsed.context_rules]
        for spec in parsed.signatures:
            if spec.id in seen:
                raise SignatureError(f"{label}: signature id {spec.id!r} already defined in {seen[spec.id]}")
            seen[spec.id] = label
            c = _Compiled(spec, [_re(p) for p in spec.patterns], [_re(p) for p in spec.context_patterns])
            for ex in spec.examples:
                if not c.search(ex):
                    raise SignatureError(f"{label}: signature {spec.id!r}: example does not match: {ex!r}")
            for ex in spec.counter_examples:
                if c.search(ex):
                    raise SignatureError(f"{label}: signature {spec.id!r}: counter-example matches: {ex!r}")
            compiled.append(c)
    for c in compiled:
        lk = c.spec.lookup
        if lk is not None:
            if lk.table not in tables:
                raise SignatureError(f"signature {c.spec.id!r}: unknown lookup table {lk.table!r}")
            if lk.group not in c.patterns[0].groupindex:
                raise SignatureError(f"signature {c.spec.id!r}: lookup group {lk.group!r} not in its first pattern")
    sigs = SignatureSet(compiled, tables, digest.hexdigest()[:12], _compile_rules(rules, compiled))
    _check_prefilter(sigs, seen)
    recache.shared().save()
    return sigs


@lru_cache(maxsize=8)
def _cached_catalog(extra: str | None, env: str) -> SignatureSet:
    return load_signatures(extra=[extra] if extra else ())


def site_catalog(extra: str | Path | None = None) -> SignatureSet:
    """The default layered catalogue (:func:`signature_search_path`) plus the folder ``extra`` (a site's
    own signatures), loaded once per process for each ``extra`` and value of ``$DIAG_SIGNATURES_PATH``.
    Raises :class:`SignatureError` as :func:`load_signatures`."""
    return _cached_catalog(str(extra) if extra else None, os.environ.get(SIGNATURES_PATH_ENV, ""))


def _check_prefilter(sigs: SignatureSet, files: dict[str, str]) -> None:
    """Every example must reach the signature stage: its lines pass the extractor's pre-filter as the
    pipeline builds it from this catalogue (a pattern re2 cannot compile adds nothing to it)."""
    from diag_service.extract.events import _LOOKAROUND, prefilter_with

    pre = None
    for c in sigs.signatures:
        # A line its own signature's re2-compatible pattern matches is in the pre-filter (the union of those
        # patterns, unanchored): that settles most examples without running the union, whose lazily built
        # automaton cost 0.4 s of every cold start on ~700 example lines.
        own = [p for p in c.patterns if not _LOOKAROUND.search(p.pattern)]
        for ex in c.spec.examples:
            lines = ex.splitlines() or [ex]
            if any(p.search(line) for p in own for line in lines):
                continue
            if pre is None:
                pre = prefilter_with(sigs.prefilter_patterns())
            if not any(pre.search(line) for line in lines):
                raise SignatureError(
                    f"{files[c.spec.id]}: signature {c.spec.id!r}: example never reaches the signature stage "
                    f"(no line passes the extractor's pre-filter; re2 cannot run this signature's pattern, so "
                    f"add a re2-compatible alternative): {ex!r}"
                )


def _compile_rules(rules: list[tuple[str, ContextRule]], compiled: list[_Compiled]) -> dict[str, list[_Rule]]:
    by_id = {c.spec.id: c for c in compiled}
    out: dict[str, list[_Rule]] = {}
    seen: set[str] = set()
    for fname, r in rules:
        if r.id in seen:
            raise SignatureError(f"{fname}: context rule id {r.id!r} defined twice")
        seen.add(r.id)
        rule = _Rule(r, [_re(p) for p in r.any_line], [_re(p) for p in r.none_line])
        for sid in r.refines:
            if sid not in by_id:
                raise SignatureError(f"{fname}: context rule {r.id!r} refines unknown signature {sid!r}")
            out.setdefault(sid, []).append(rule)
        for ex in r.examples:
            lines = ex.splitlines()
            if not any(by_id[sid].search(line) for sid in r.refines for line in lines):
                raise SignatureError(f"{fname}: context rule {r.id!r}: no refined signature matches example {ex!r}")
            if not rule.fires(lines):
                raise SignatureError(f"{fname}: context rule {r.id!r}: example does not fire it: {ex!r}")
        for ex in r.counter_examples:
            if rule.fires(ex.splitlines()):
                raise SignatureError(f"{fname}: context rule {r.id!r}: counter-example fires it: {ex!r}")
    return out


def _apply_rule(fields: dict, rules: list[_Rule], lines: list[str]) -> str:
    """Override ``fields`` with the first rule that fires on ``lines``; return its id ('' if none)."""
    for rule in rules:
        if rule.fires(lines):
            r = rule.spec
            fields["name"] = r.name
            fields["explanation"] = r.explanation
            _override(fields, r)
            fields["details"] = {**fields["details"], "context_rule": r.id}
            return r.id
    return ""


def _hit_fields(c: _Compiled, m: re.Match[str], tables: dict[str, dict[str, LookupEntry]]) -> dict:
    spec = c.spec
    details = {k: v for k, v in m.groupdict().items() if v is not None}
    out = {
        "signature_id": spec.id,
        "name": spec.name,
        "failure_mode": spec.failure_mode,
        "category": spec.category,
        "role": spec.role,
        "priority": spec.priority,
        "confidence": spec.confidence,
        "explanation": spec.explanation,
        "source": spec.source,
        "details": details,
    }
    if spec.lookup is not None:
        value = details.get(spec.lookup.group)
        entry = tables[spec.lookup.table].get(str(int(value)) if value and value.isdigit() else str(value))
        if entry is not None:
            out["name"] = f"{spec.name}: {entry.name}"
            out["explanation"] = entry.explanation
            _override(out, entry)
    return out


def _has_frames(lines: list[str]) -> bool:
    return any(FRAME_LINE.match(x) for x in lines)


def _context_lines(ev: RawEvent, framed: RawEvent | None) -> list[str]:
    """The lines a context rule reads for ``ev``: its own, or, when it has no traceback frames and another
    example of the same template does (``framed``), that example's."""
    lines = ev.lines or [ev.key]
    if framed is not None and framed is not ev and not _has_frames(lines):
        return framed.lines
    return lines


def match_signatures(groups: Iterable[TemplateGroup], sigs: SignatureSet) -> tuple[list[SignatureHit], dict[int, list[str]]]:
    """Match every template group (on up to 8 distinct example lines each) against ``sigs``.

    Returns the hits (one per signature and lookup value, merged across groups, with ranks, nodes,
    template ids and earliest time) and, per group index, the ids of the signatures it matched.
    """
    hits: dict[tuple[str, str], dict] = {}
    per_group: dict[int, list[str]] = {}
    groups = list(groups)
    # the same exception shown elsewhere in the logs with its traceback (a launcher's or Ray's re-print of a
    # worker's error, kept as another event kind of the same template): its frames are the context of the copies
    # shown without them
    framed_by_template: dict[int, RawEvent] = {}
    for g in groups:
        if g.template_id not in framed_by_template:
            ev_f = next((ev for ev in g.examples if _has_frames(ev.lines)), None)
            if ev_f is not None:
                framed_by_template[g.template_id] = ev_f
    for gi, g in enumerate(groups):
        matched: list[str] = []
        matched_evs: dict[tuple[str, str], list] = {}
        framed = framed_by_template.get(g.template_id)
        for ev in g.examples:
            if not sigs.any_pattern.search(ev.key):
                continue
            # a Python warning names a risk, not the failure, unless it reports an error it caught: where that error's
            # text starts (once per event, not per signature)
            caught = _CAUGHT_ERROR.search(ev.key) if ev.kind is EventKind.WARNING else None
            for c in sigs.signatures:
                if c.spec.kinds and ev.kind not in c.spec.kinds:
                    continue
                warned = ev.kind is EventKind.WARNING and c.spec.role is EventRole.ROOT and EventKind.WARNING not in c.spec.kinds
                if warned and caught is None:
                    continue
                m = c.search(ev.key)
                if m is None or (warned and caught is not None and caught.end() > m.start()):
                    continue
                if c.context and not any(p.search(line) for p in c.context for line in ev.lines):
                    continue
                fields = _hit_fields(c, m, sigs.tables)
                lk = fields["details"].get(c.spec.lookup.group, "") if c.spec.lookup else ""
                rule_id = _apply_rule(fields, sigs.rules.get(c.spec.id, []), _context_lines(ev, framed))
                hk = (c.spec.id, lk + "|" + rule_id)  # a rule changes the answer: its hits are its own
                h = hits.get(hk)
                if h is None:
                    h = hits[hk] = {
                        **fields, "template_ids": set(), "ranks": set(), "nodes": set(), "ts": None, "approx": False, "order": gi,
                    }
                h["template_ids"].add(g.template_id)
                matched_evs.setdefault(hk, []).append(ev)
                if c.spec.id not in matched:
                    matched.append(c.spec.id)
        for hk, evs in matched_evs.items():
            h = hits[hk]
            every = len(evs) == len(g.examples)
            for r_ev in ([g.first, *evs] if every else evs):
                if r_ev is not None and r_ev.ts is not None and (h["ts"] is None or r_ev.ts < h["ts"]):
                    h["ts"] = r_ev.ts
                    h["approx"] = r_ev.ts_approx
            if every:
                h["ranks"] |= g.ranks
                h["nodes"] |= g.nodes
            else:
                # only some lines of this template match (one template can hold a SIGKILL and a
                # SIGTERM exit): the matching lines name their own ranks and nodes
                h["ranks"] |= {e.rank for e in evs if e.rank is not None}
                h["nodes"] |= {e.node for e in evs if e.node is not None}
        if matched:
            per_group[gi] = matched
    out: list[SignatureHit] = []
    for h in sorted(hits.values(), key=lambda h: (-h["priority"], h["ts"] if h["ts"] is not None else float("inf"), h["order"])):
        out.append(
            SignatureHit(
                signature_id=h["signature_id"], name=h["name"], failure_mode=h["failure_mode"],
                category=h["category"], role=h["role"], priority=h["priority"], confidence=h["confidence"],
                explanation=h["explanation"], source=h["source"], details=h["details"],
                template_ids=sorted(h["template_ids"]), ranks=sorted(h["ranks"])[:64],
                nodes=sorted(h["nodes"])[:64], first_timestamp=iso(h["ts"]), first_timestamp_approx=h["approx"],
            )
        )
    return out, per_group
