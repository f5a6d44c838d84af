"""Build hook: ship ``knowledge_base/``, ``models/`` and the lab's scenarios inside the wheel as
``diag_service/_data/<root>`` (the mapping :data:`DATA_ROOTS`, the same as ``diag_service.resources.DATA_SOURCES``).

The folders stay at the top of the source tree (they are data, edited and reviewed as such);
``diag_service.resources.builtin`` finds them in either place. Editable installs read the source
tree directly, so nothing is copied for them.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
DATA_ROOTS = {"knowledge_base": "knowledge_base", "models": "models", "lab_scenarios": "eval/lab/scenarios"}
SUFFIXES = {".yaml", ".yml", ".md", ".txt", ".jinja", ".j2", ".json"}


class BuildWithData(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for root, folder in DATA_ROOTS.items():
            src = HERE / folder
            dst = Path(self.build_lib) / "diag_service" / "_data" / root
            if dst.exists():
                shutil.rmtree(dst)
            for f in sorted(src.rglob("*")):
                if f.is_file() and f.suffix in SUFFIXES:
                    out = dst / f.relative_to(src)
                    out.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(f, out)


setup(cmdclass={"build_py": BuildWithData})
