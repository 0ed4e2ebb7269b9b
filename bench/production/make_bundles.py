"""Writes N valid, distinct Flow bundles with openadapt-flow's own IR and save routine.

Run it with a Python that has openadapt-flow 2.4.0 (target/ref-venv or target/flow-venv):

    target/ref-venv/bin/python bench/production/make_bundles.py OUT_DIR [--count 200]

OUT_DIR gets `bundle-000` ... `bundle-NNN`. Each bundle is a synthetic schema-v2 workflow
(six typed inputs, eight steps, no templates, not encrypted, never certified) saved through
`Workflow.save`, so its manifest is sealed the way Flow seals it and `Workflow.load` accepts it.
Names and created_at differ per bundle, so every content digest (and workflow id) is distinct.
Step fields keep their defaults, so workflow.json has a realistic size (~10 KB). Prints one JSON
line: {"dir", "count", "digests_distinct", "bytes_per_workflow_json"}. Every value is made up.
"""

import argparse
import datetime
import json
import shutil
import sys
from pathlib import Path

from openadapt_flow.ir import ParamSpec, Step, Workflow


def make_one(out: Path, i: int, created: datetime.datetime) -> str:
    specs = {
        "note": ParamSpec(name="note", type="string", example=f"Synthetic note {i}"),
        "visit_date": ParamSpec(name="visit_date", type="date", example="2026-01-02"),
        "visit_kind": ParamSpec(name="visit_kind", type="enum", example="Triage",
                                choices=["Triage", "Consult", "Follow-up"]),
        "dose_mg": ParamSpec(name="dose_mg", type="number", example=5),
        "urgent": ParamSpec(name="urgent", type="boolean", example=False),
        "patient_ref": ParamSpec(name="patient_ref", type="entity_ref", example="p1"),
    }
    steps = [Step(id="step_000", intent="click 'Open'", action="click", field_label="Open")]
    steps += [
        Step(id=f"step_{k + 1:03d}", intent=f"type <{name}>", action="type",
             text=str(spec.example), param=name, field_label=name)
        for k, (name, spec) in enumerate(specs.items())
    ]
    steps.append(Step(id=f"step_{len(steps):03d}", intent="press Enter", action="key", key="Enter"))
    wf = Workflow(
        name=f"bench-workflow-{i:03d}",
        created_at=created.isoformat(),
        params={k: str(v.example) for k, v in specs.items()},
        param_specs=specs,
        steps=steps,
    )
    wf.save(out)
    return wf.manifest.content_digest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--count", type=int, default=200)
    args = ap.parse_args()
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    base = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    digests = []
    for i in range(args.count):
        d = args.out / f"bundle-{i:03d}"
        digest = make_one(d, i, base + datetime.timedelta(seconds=i))
        loaded = Workflow.load(d)  # the reference's own loader: the seal must verify
        assert loaded.manifest.content_digest == digest, d
        digests.append(digest)
    size = (args.out / "bundle-000" / "workflow.json").stat().st_size if digests else 0
    print(json.dumps({"dir": str(args.out), "count": len(digests),
                      "digests_distinct": len(set(digests)) == len(digests),
                      "bytes_per_workflow_json": size}))
    return 0 if len(set(digests)) == len(digests) else 1


if __name__ == "__main__":
    sys.exit(main())
