"""A query asked across languages (``heron.libraries.search.across``): a Portuguese or
Spanish query over English pages is searched in English too, the two lists fused by
reciprocal rank, every result carrying the reading; an English query, a query with a
page in its own language among the first, and ``translate=False`` are searched as
written. Real Apertium (``scripts/setup``; skips without it, fails in CI)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from heron.libraries import add_library, index_library, search_many
from heron.settings import Settings
from heron.store import Store, open_store
from tests.libraries.conftest import write_pages

pytestmark = pytest.mark.usefixtures("apertium")

OFFICE = {
    "office/parking.md": (
        "# Parking\n\nA parking space in the garage costs 60 EUR a month, paid from your "
        "salary. Ask facilities for a badge; electric cars charge on the first floor for "
        "up to four hours.\n"
    ),
    "office/rooms.md": (
        "# Meeting rooms\n\nBook a room through your calendar. If nobody checks in on the "
        "tablet within ten minutes, the booking is released.\n"
    ),
    "people/payroll.md": (
        "# Payroll\n\nSalaries are paid on the 25th of each month. Your payslip is in the HR "
        "portal; a change of bank account must reach HR before the 15th.\n"
    ),
    "it/laptops.md": (
        "# Laptops\n\nLaptops are replaced every three years. A broken or stolen laptop is "
        "reported to the help desk at once, with a police report for a theft.\n"
    ),
    "it/vpn.md": (
        "# VPN\n\nThe VPN client connects with your company account and the authenticator "
        "app. Hotel networks that block it work through the backup port 443.\n"
    ),
}
#: The same office's notes on parking, written in Portuguese.
ESTACIONAMENTO = (
    "# Estacionamento\n\nUma vaga na garagem custa 60 euros por mês, descontados do salário. "
    "Peça o cartão à equipa de instalações; os carros elétricos carregam no primeiro andar "
    "durante quatro horas no máximo.\n"
)


@pytest.fixture
def office(settings: Settings, tmp_path: Path) -> Iterator[tuple[Store, Settings]]:
    add_library("office", str(write_pages(tmp_path / "office", OFFICE)), settings)
    store = open_store(settings)
    try:
        index_library("office", store, settings=settings)
        yield store, settings
    finally:
        store.close()


def test_a_portuguese_query_over_english_pages_is_searched_in_english_too(
    office: tuple[Store, Settings],
) -> None:
    store, settings = office
    query = "Quanto custa a vaga na garagem?"
    [on] = search_many([query], store, settings=settings, top_k=5)
    [off] = search_many([query], store, settings=settings, top_k=5, translate=False)
    assert on[0].page == "office/parking" != off[0].page
    reading = on[0].english_query
    assert reading and "garage" in reading.lower()
    assert {r.english_query for r in on} == {reading}
    assert {r.english_query for r in off} == {None}
    assert {r.language for r in on} == {"en"}
    # A page only the reading found has no cosine of the query's own: no dense component.
    found_as_written = {r.page for r in off}
    for result in on:
        assert (result.components["dense"] is None) == (result.page not in found_as_written)
    # The setting is the default of every door.
    settings_off = settings.model_copy(
        update={"library": settings.library.model_copy(update={"translate": False})}
    )
    [default_off] = search_many([query], store, settings=settings_off, top_k=5)
    assert [r.page for r in default_off] == [r.page for r in off]


def test_the_pages_shown_do_not_change_the_fusion(office: tuple[Store, Settings]) -> None:
    """Both lists are fused ``ACROSS_DEPTH`` deep whatever ``top_k`` shows: a client
    asking for two pages gets the first two of five."""
    store, settings = office
    query = "¿Cada cuánto se cambian los portátiles?"
    [five] = search_many([query], store, settings=settings, top_k=5)
    [two] = search_many([query], store, settings=settings, top_k=2)
    assert [r.page for r in two] == [r.page for r in five[:2]]
    assert two[0].english_query


def test_an_english_query_is_searched_as_written(office: tuple[Store, Settings]) -> None:
    store, settings = office
    [found] = search_many(["How much is a parking space?"], store, settings=settings)
    assert found[0].page == "office/parking" and found[0].english_query is None


def test_a_page_in_the_query_s_language_among_the_first_keeps_it_as_written(
    office: tuple[Store, Settings], tmp_path: Path
) -> None:
    store, settings = office
    root = write_pages(tmp_path / "notas", {"instalacoes/estacionamento.md": ESTACIONAMENTO})
    add_library("notas", str(root), settings)
    index_library("notas", store, settings=settings)
    [found] = search_many(
        ["Quanto custa a vaga na garagem?"], store, settings=settings, library=["office", "notas"]
    )
    assert "instalacoes/estacionamento" in [r.page for r in found[:5]]
    assert {r.english_query for r in found} == {None}
