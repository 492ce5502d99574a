"""The release dossier (docs/dossier.md): `build` writes it (`trustmh dossier`), `leaks` keeps private text out
of it, `pages` renders its summary and failing conversations, `verify` checks it again (`trustmh verify`)."""
