"""``rlguard doctor``: can this TorchRL install do what the code asks?

Every probe that imports torch runs in a subprocess, so a broken or missing torch is
reported, never raised. Items: versions and their declared requirements, torchrl's and
tensordict's compiled parts, the accelerator and pinned memory, the target torchrl version
``rlguard check`` would use here, and (with --project) which findings depend on it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from importlib import metadata

from rlguard.config import Config
from rlguard.engine.target import Target, parse_version, satisfies
from rlguard.runtime.errors import INSTALL_RUNTIME

PACKAGES = ("torch", "tensordict", "torchrl")
PROBE_SECONDS = 60

_ACCELERATOR_PROBE = """
import json
out = {}
try:
    import torch
except Exception as error:
    print(json.dumps({"torch_error": f"{type(error).__name__}: {error}"}))
    raise SystemExit
out["cuda"] = torch.cuda.is_available()
out["device_count"] = torch.cuda.device_count() if out["cuda"] else 0
out["device"] = torch.cuda.get_device_name(0) if out["cuda"] else None
try:
    out["pinned"] = bool(torch.zeros(4).pin_memory().is_pinned())
    out["pin_error"] = None
except Exception as error:
    out["pinned"], out["pin_error"] = False, str(error)
try:
    import tensordict._C
    out["tensordict_c"] = None
except Exception as error:
    out["tensordict_c"] = f"{type(error).__name__}: {error}"
print(json.dumps(out))
"""


@dataclass
class Item:
    name: str
    verdict: str  # "ok", "warn" or "fail"
    evidence: str
    fix: str = ""


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def version_items(versions: dict[str, str | None]) -> list[Item]:
    items = [Item("python", "ok", sys.version.split()[0])]
    for package in PACKAGES:
        found = versions[package]
        items.append(Item(package, "ok", found) if found else
                      Item(package, "warn", "not installed (a linter-only install)", f"{INSTALL_RUNTIME}, for the runtime half"))
    for package in PACKAGES:
        if versions[package] is None:
            continue
        for requirement in metadata.requires(package) or []:
            if ";" in requirement:  # extras and markers: optional dependencies
                continue
            match = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(.*)", requirement)
            if match is None:  # not a requirement we can read: nothing to check
                continue
            needed, spec = match.group(1).lower(), match.group(2).strip()
            installed = versions.get(needed)
            if needed not in PACKAGES or not spec or installed is None:
                continue
            ok = satisfies(parse_version(installed), spec)
            items.append(Item(f"{package} needs {needed}{spec}", "ok" if ok else "fail",
                              f"{needed} {versions[needed]} is installed",
                              "" if ok else f"pip install '{needed}{spec}' (or the {package} release made for {needed} {versions[needed]})"))
    return items


# What rlguard's runtime covers when torchrl's extension does not load: torchrl uses the extension
# only for the segment trees of prioritized replay, and install() gives those an extension-free stand-in.
COVERED = ("your code runs if it calls rlguard.runtime.install() first: prioritized replay, the only torchrl "
           "feature that needs the extension, then uses rlguard's extension-free segment trees; without it, "
           "PrioritizedSampler raises")


def extension_item(status: dict | None, problem: str) -> Item:
    name = "torchrl compiled extension"
    if status is None:
        return Item(name, "fail", problem, "reinstall torchrl")
    if status["loads"]:
        return Item(name, "ok", f"{status['path']} loads")
    if status["path"] is None and status.get("torchrl_version") is None:
        return Item(name, "warn", "torchrl is not installed")
    # The cause names a missing symbol short already (extension.short_symbol).
    cause = status.get("cause") or str(status["error"])
    evidence = f"does not load: {cause}" + (f" ({os.path.basename(status['path'])})" if status.get("missing_symbol") else "")
    if not status.get("fallback"):  # torch itself is broken: nothing in rlguard helps
        return Item(name, "fail", evidence, status["fix"])
    return Item(name, "warn", evidence, f"{COVERED}. To load the extension itself: {status['fix']}")


def accelerator_items(probe: dict | None, problem: str) -> list[Item]:
    if probe is None:
        return [Item("accelerator", "fail", problem, "reinstall torch")]
    if "torch_error" in probe:
        return [Item("torch import", "fail", probe["torch_error"], "reinstall torch (pip install torch==<version>)")]
    items = []
    if probe["cuda"]:
        items.append(Item("accelerator", "ok", f"{probe['device_count']} CUDA device(s): {probe['device']}"))
    else:
        items.append(Item("accelerator", "warn", "none: this torch runs on the CPU only"))
    if probe["pinned"]:
        items.append(Item("pinned memory", "ok", "Tensor.pin_memory() works"))
    elif probe["cuda"]:
        items.append(Item("pinned memory", "fail", probe["pin_error"], "check the CUDA driver and torch build"))
    else:
        items.append(Item("pinned memory", "warn", f"unavailable without an accelerator: {probe['pin_error']}",
                          "pin_memory=True makes a stock TensorDictReplayBuffer raise on every sample(): pass "
                          "pin_memory=False here, or use rlguard.runtime.TensorDictReplayBuffer (warns once, samples unpinned)"))
    if probe["tensordict_c"] is None:
        items.append(Item("tensordict compiled part", "ok", "tensordict._C loads"))
    else:
        items.append(Item("tensordict compiled part", "fail", probe["tensordict_c"], "reinstall tensordict for this torch"))
    return items


def target_item(target: Target) -> Item:
    return Item("target-torchrl", "ok", f"{target.text} (from {target.source})")


def project_items(project: str, config: Config, target: Target) -> list[Item]:
    from rlguard.engine.runner import RunOptions, check
    from rlguard.rules import RULES_BY_CODE

    report, _ = check([project], config, RunOptions(jobs=1, use_cache=False), target)
    counts: dict[str, int] = {}
    for finding in report.findings:
        rule = RULES_BY_CODE.get(finding.code)
        if rule is not None and rule.min_target is not None:  # verdicts that depend on the version
            counts[finding.code] = counts.get(finding.code, 0) + 1
    if not counts:
        return [Item("version-dependent findings", "ok", f"none in {project} for torchrl {target.text}")]
    return [Item(f"{code} {RULES_BY_CODE[code].name}", "warn", f"would fire on {n} place(s) in {project} for torchrl {target.text}",
                 f"rlguard check {project} --select {code}") for code, n in sorted(counts.items())]


def diagnose(config: Config, target: Target, project: str | None = None, extension_path: str | None = None) -> list[Item]:
    versions = {package: _version(package) for package in PACKAGES}
    items = version_items(versions)
    extension_command = [sys.executable, "-m", "rlguard.runtime.extension"] + (["--path", extension_path] if extension_path else [])
    if versions["torch"] is None:
        items.append(Item("accelerator", "warn", "torch is not installed"))
        items.append(Item("torchrl compiled extension", "warn", "torch is not installed"))
    else:
        # Both probes import torch (seconds each): run them side by side.
        with _Parallel([sys.executable, "-c", _ACCELERATOR_PROBE], extension_command) as (accelerator, extension):
            items.append(extension_item(*extension))
            items.extend(accelerator_items(*accelerator))
    items.append(target_item(target))
    if project:
        items.extend(project_items(project, config, target))
    return items


class _Parallel:
    """Start commands at once; on enter, wait for each and parse its last line as JSON."""

    def __init__(self, *commands: list[str]) -> None:
        self._processes = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in commands]

    def __enter__(self) -> list[tuple[dict | None, str]]:
        results: list[tuple[dict | None, str]] = []
        for process in self._processes:
            try:
                out, err = process.communicate(timeout=PROBE_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                results.append((None, f"the probe did not finish in {PROBE_SECONDS} s"))
                continue
            try:
                results.append((json.loads(out), ""))
            except json.JSONDecodeError:
                tail = (err.strip().splitlines() or ["no output"])[-1]
                results.append((None, f"the probe crashed (exit {process.returncode}): {tail}"))
        return results

    def __exit__(self, *_exc) -> None:
        for process in self._processes:
            if process.poll() is None:
                process.kill()


def render_text(items: list[Item]) -> str:
    width = max(len(i.name) for i in items)
    lines = []
    for item in items:
        lines.append(f"{item.verdict.upper():4}  {item.name:<{width}}  {item.evidence}")
        if item.fix:
            lines.append(f"{'':4}  {'':<{width}}  fix: {item.fix}")
    return "\n".join(lines) + "\n"


def render_json(items: list[Item]) -> str:
    return json.dumps([asdict(i) for i in items], indent=2) + "\n"
