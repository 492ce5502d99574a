"""`trustmh judge certify`: measure a judge, asked exactly as a run asks it, against human labels and write a
certificate (docs/judges.md#certificates).

* `core`: the machinery every reference shares: a `Reference` (items, the humans' labels, how to read the
  judge's label from a judged record), judging it through Inspect, the agreement figures, the certificate.
* `references`: the reference sets, **one module per reference, found by name** (`--reference NAME`). A module
  there declares `REFERENCE = ReferenceSource(name=..., subtask=..., label_type=..., load=...)`; `load(ctx,
  request)` returns a `Reference` (reading the publisher's files at run time, never a copy in the repository).
  Adding a reference is adding one module: no table to edit (docs/judges.md#adding-a-reference).

This package sits above `run/` (it judges through the run's Inspect tasks) and may name pillars.
"""
