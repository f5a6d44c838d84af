"""The per-code Xid table (knowledge_base/signatures/xid.yaml) used by signature `xid`.

Kernel-log lines follow the shape the NVIDIA driver prints (``NVRM: Xid (PCI:<bdf>): <code>, ...``);
each must reach the table entry for its code and give that entry's category.
"""

from __future__ import annotations

import pytest

from diag_service.domain import Category, EventRole
from diag_service.kb.text import analyze_text
from diag_service.signatures import load_signatures

TS = "[Tue Mar 12 10:02:11 2024] "

LINES = [
    # GSP firmware: RPC timeout
    (119, Category.GPU_HARDWARE, EventRole.ROOT,
     "NVRM: Xid (PCI:0000:1b:00): 119, pid=2345, name=python, Timeout after 6s of waiting for RPC response "
     "from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801348 0x4)."),
    # NVLink (pre-Blackwell)
    (74, Category.GPU_HARDWARE, EventRole.ROOT,
     "NVRM: Xid (PCI:0000:8a:00): 74, pid=51234, name=python, NVLink: fatal error detected on link 5"
     "(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)"),
    # NVLink5 (Blackwell) link event
    (149, Category.GPU_HARDWARE, EventRole.ROOT,
     "NVRM: Xid (PCI:0008:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x026001c6 0x00000000 0x00000000 "
     "0x00000000 0x00000000 0x00000000)"),
    # row remapping
    (63, Category.GPU_HARDWARE, EventRole.ROOT,
     "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate."),
    # contained ECC error
    (94, Category.GPU_HARDWARE, EventRole.ROOT,
     "NVRM: Xid (PCI:0000:3b:00): 94, pid=2345, name=python, Contained: SM (0x1). RST: No, D-RST: No"),
    # application-caused: MMU fault
    (31, Category.USER_CODE, EventRole.ROOT,
     "NVRM: Xid (PCI:0000:3b:00): 31, pid=4169, name=python, Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS "
     "GPCCLIENT_T1_0 faulted @ 0x7f2a_c0000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"),
    # application-caused: illegal NVLink peer access
    (137, Category.USER_CODE, EventRole.ROOT,
     "NVRM: Xid (PCI:0000:3b:00): 137, pid=4169, name=python, NVLink: Remote MMU fault"),
    # driver / software mismatch
    (78, Category.INFRASTRUCTURE, EventRole.ROOT,
     "NVRM: Xid (PCI:0000:3b:00): 78, pid=1234, vGPU Start Error: Guest driver is incompatible with host driver"),
    # C2C corrected errors: informational
    (121, Category.GPU_HARDWARE, EventRole.SYMPTOM,
     "NVRM: Xid (PCI:0008:01:00): 121, C2C link corrected error"),
]


@pytest.mark.parametrize(("code", "category", "role", "line"), LINES, ids=[str(c[0]) for c in LINES])
def test_kernel_line_reaches_its_table_entry(code: int, category: Category, role: EventRole, line: str) -> None:
    d = analyze_text(TS + line + "\n")
    hit = next(h for h in d.signature_hits if h.signature_id == "xid")
    assert hit.details["code"] == str(code)
    assert hit.category is category and hit.role is role
    entry = load_signatures().tables["xid"][str(code)]
    assert hit.name.endswith(entry.name)
    if role is EventRole.ROOT:
        assert d.category is category


def test_every_entry_is_complete() -> None:
    table = load_signatures().tables["xid"]
    assert {int(k) for k in table} >= set(range(1, 173))
    for code, e in table.items():
        assert e.name.strip(), code
        assert e.category is not None, code
        assert e.explanation.strip(), code
        assert e.priority is not None and e.confidence is not None, code
        # entries without a source inherit the signature's (NVIDIA's Xid page)
        assert e.source is None or e.source.startswith("https://docs.nvidia.com/"), code
        if e.role is EventRole.SYMPTOM:
            assert e.priority <= 30, code


@pytest.mark.parametrize("code", [5, 10, 49, 87, 90, 91])
def test_reserved_codes_are_unexplained(code: int) -> None:
    e = load_signatures().tables["xid"][str(code)]
    assert e.category is Category.UNKNOWN and e.priority <= 30
