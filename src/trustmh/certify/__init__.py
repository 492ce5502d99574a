"""The `trustmh judge certify` and `trustmh review` commands (docs/judges.md), on the commands' floor: they judge
through the run (`trustmh.run`) and name the catalogue's references.

* `measure`: judge a `Reference` (`trustmh.judges.references`) through the run, the agreement figures, the
  certificate.
* `registry`: every reference by name (`--reference NAME`): the pillars declare theirs beside their sub-tasks
  (`REFERENCES`), the catalogue walk collects them; the generic CSV (`csv_reference`) is named by its path.
  Adding a reference is declaring it in its pillar (docs/judges.md#adding-a-reference).
* `review`: a team's own labels for a run's judged items (`trustmh review export|import`).
"""
