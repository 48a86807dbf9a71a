"""The cosines at which a match counts, per embedding profile.

A cosine means something only on its model's scale: unrelated texts score 0.1 to 0.3
under all-MiniLM-L6-v2 but 0.7 to 0.85 under multilingual-e5-small, whose cosines are
compressed near the top. So a threshold chosen on MiniLM (a skill fits from 0.45) lets
every off-topic request through under e5. Each embedder carries its ``Calibration``
(``calibration_of(embedder)``) and the capabilities read their thresholds from it.

The e5 figures were measured, not scaled: ``python -m bench.e5 thresholds`` puts the same
requests (on-topic ones from the bench sets and off-topic ones) through both models and
takes, for each threshold, the e5 cosine that lets through as many requests as MiniLM's
does (docs/benchmarks.md, "Embedding profiles (e5)").
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Calibration:
    """One model's thresholds, as cosines between a query and what it is compared with.

    ``skill``: the best skill's cosine from which skills join the agent's prompt.
    ``weak``: the best passage's cosine from which an extractive answer still quotes the
    closest passages (below it they are unrelated). ``docs``: the best passage's cosine
    from which passages join the prompt (``agent_docs_threshold`` when unset).
    ``tool``: the best tool's cosine from which the first turn is forced to call it
    (``agent_tool_threshold`` when unset). ``route``: the cosine from which the tool
    router offers a tool (``ToolRouter``'s ``threshold`` when unset). ``overlap``: the
    cosine between a search and a file's topic (its path and headings) from which the
    interventions see a research overlap (``tests/interventions/overlap_pairs.jsonl``: 40
    labelled pairs; no false overlap on either model, with a margin over the highest
    unrelated pair larger than the CPU's kernels move a cosine: MiniLM 0.123 against
    3e-7, e5 0.0185 against 0.0152; docs/benchmarks.md, "Golden values and thresholds
    on any CPU").
    ``spread``: how far apart "fits" and "unrelated" lie on this model's scale, the median
    best skill cosine of on-topic requests minus that of off-topic ones (``python -m
    bench.e5 thresholds``, the 64 skill requests and 20 off-topic ones: MiniLM 0.4843 -
    0.1896, e5 0.8674 - 0.8066); ``heron.skills`` adds its word bonus in these units.
    ``support``: the evidence from which an extractive answer quotes the closest passages
    though none fits (``heron.agent.triage.support``: the best passage's cosine minus
    ``docs``, plus how far it stands above the median of the next pages): a page that
    stands out of its candidates is found even when the question's words are far from
    its own, as a Portuguese question over English pages is. Measured on the real-use
    notes with Kubernetes beside them, 55 English, 20 Portuguese and 20 Spanish questions
    against 36 off-topic ones (``python -m bench people``, docs/benchmarks.md): every
    question whose page search ranks first reaches it; trivia stays under it.
    MiniLM's for a model that says nothing.
    """

    skill: float
    weak: float
    docs: float
    tool: float
    route: float
    overlap: float
    spread: float = 0.295
    support: float = 0.0


#: all-MiniLM-L6-v2, where the thresholds were first chosen (and the default for a model
#: that says nothing, such as a remote one).
MINILM = Calibration(
    skill=0.45, weak=0.3, docs=0.45, tool=0.5, route=0.25, overlap=0.25, spread=0.295, support=0.0
)
#: multilingual-e5-small (either runtime): queries in the ``query: `` role.
E5 = Calibration(
    skill=0.84,
    weak=0.86,
    docs=0.88,
    tool=0.86,
    route=0.83,
    overlap=0.87,
    spread=0.061,
    support=-0.02,
)


def shifted(calibration: Calibration, by: float) -> Calibration:
    """``calibration`` with every threshold moved by ``by`` (its ``spread`` as it is)."""
    return replace(
        calibration,
        skill=calibration.skill + by,
        weak=calibration.weak + by,
        docs=calibration.docs + by,
        tool=calibration.tool + by,
        route=calibration.route + by,
        overlap=calibration.overlap + by,
    )


def calibration_of(embedder: object, query: str | None = None) -> Calibration:
    """The thresholds of ``embedder``'s model: its ``calibration``, else MiniLM's. For a
    profile whose model depends on the query's language (``MultilingualEmbedder``), those
    of the model that embeds ``query`` when it is given."""
    per_query = getattr(embedder, "calibration_for", None)
    if query is not None and per_query is not None:
        found = per_query(query)
    else:
        found = getattr(embedder, "calibration", None)
    return found if isinstance(found, Calibration) else MINILM
