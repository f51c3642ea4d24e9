from hifo.knowledge_base.similarity import normalise, search_terms, similarity


def test_identical_and_reworded_texts_are_near_duplicates():
    a = "Prefer bins with the smallest remaining capacity after placing the item."
    assert similarity(a, a) == 1.0
    b = "Prefer the bins with smallest remaining capacity after the item is placed."
    assert similarity(a, b) >= 0.75


def test_parenthesised_evidence_is_ignored():
    a = "Heuristics that use np.exp scored better (4/5 elites vs 1/6 weak candidates)."
    b = "Heuristics that use np.exp scored better (5/5 elites vs 0/6 weak candidates)."
    assert normalise(a) == normalise(b)
    assert similarity(a, b) == 1.0


def test_different_code_anchor_or_number_is_never_a_duplicate():
    assert similarity("Heuristics that use np.exp scored better.", "Heuristics that use np.log scored better.") == 0.0
    assert similarity("Keep the threshold near 0.3 for tight bins.", "Keep the threshold near 0.7 for tight bins.") == 0.0
    assert similarity(
        "Heuristics that use the argument `bins` scored better.",
        "Heuristics that use the argument `item` scored better.",
    ) == 0.0


def test_opposite_polarity_or_direction_is_never_a_duplicate():
    assert similarity("Prefer bins that fit the item tightly.", "Avoid bins that fit the item tightly.") == 0.0
    assert similarity("Heuristics that divide scored better.", "Heuristics that divide scored worse.") == 0.0
    assert similarity("Shorter heuristics scored better.", "Longer heuristics scored better.") == 0.0


def test_unrelated_texts_score_low():
    assert similarity("Penalise long edges to unvisited cities.", "Prefer bins with little space left.") < 0.3


def test_search_terms_drop_stop_words_and_keep_order():
    assert search_terms("The ONLINE bin packing of the items") == ["online", "bin", "packing", "items"]
    assert search_terms('"; DROP TABLE x; --') == ["drop", "table"]  # one-letter words are dropped
