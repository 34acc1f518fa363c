from pathlib import Path

from ledger.records.schemas import render_schemas

SCHEMAS = Path(__file__).parent.parent / "schemas"


def test_schemas_are_up_to_date() -> None:
    rendered = render_schemas()
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in SCHEMAS.glob("*.schema.json")}
    stale = sorted(n for n in rendered if on_disk.get(n) != rendered[n])
    extra = sorted(set(on_disk) - set(rendered) - {"claims.schema.json"})  # not a record
    assert not stale and not extra, (
        f"schemas/ is stale (changed: {stale}, extra: {extra}); "
        "run `python -m ledger.records schemas/`"
    )
