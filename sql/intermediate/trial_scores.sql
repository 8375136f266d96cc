-- trial_scores: one row per scored trial (its latest score) with everything about its item.
-- depends_on: items, latest_scores
-- materialised: trial_id

CREATE OR REPLACE VIEW trial_scores AS
SELECT
    s.trial_id, s.model, s.sample_idx, s.status, s.correct, s.lenient_correct, s.predicted,
    s.scorer_version, s.response_ids, s.created_at AS scored_at,
    i.item_id, i.suite, i.task, i.family_id, i.variant, i.prompt_style, i.category,
    i.key_entities, i.bin, i.bin_lo, i.bin_hi, i.gold, i.answer_type, i.params,
    i.n_chars, i.n_words, i.n_tokens, i.n_symbols, i.symbol_density, i.n_numbers,
    i.n_operators, i.n_points
FROM latest_scores s JOIN items i USING (item_id);
