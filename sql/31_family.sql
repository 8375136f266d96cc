-- Intermediate, family level: helper macros and one answer per family unit and variant.
--
-- A family unit is one family as one model answered it under one prompt style, generator seed
-- and repeat: (model, suite, task, category, prompt_style, family_id, seed, sample_idx). The
-- prompt style is never a variant of a family (suites cross it with every variant), so units of
-- different prompt styles are never compared with each other.

-- Variants with a conventional order come first in that order (GeoRepEval's representations);
-- every other variant sorts after them by name. Used for flip patterns and pair orientation.
CREATE OR REPLACE MACRO variant_order() AS ['euclid', 'coord', 'vector'];

CREATE OR REPLACE MACRO variant_rank(v) AS coalesce(list_position(variant_order(), v), 1000000);

-- Exact two-sided McNemar p-value: min(1, 2·P(X <= min(b, c))), X ~ Bin(b + c, 1/2); each
-- binomial term is computed in log space (lgamma) so large counts neither overflow nor underflow.
CREATE OR REPLACE MACRO mcnemar_exact_p(b, c) AS
    CASE WHEN b + c = 0 THEN 1.0 ELSE least(1.0, 2 * list_sum(list_transform(
        range(least(b, c) + 1),
        lambda i: exp(lgamma(b + c + 1) - lgamma(i + 1) - lgamma(b + c - i + 1) - (b + c) * ln(2))
    ))) END;

-- Additive groups by name (tasks/suites/symmetry/group.py): 'integers', or 'mod<m>' whose
-- elements are the residues [0, m). group_modulus is NULL for the integers.
CREATE OR REPLACE MACRO group_modulus(group_name) AS
    TRY_CAST(regexp_extract(group_name, '^mod(\d+)$', 1) AS BIGINT);

-- The exact residue in [0, m) of an integer written in decimal, of any length (model answers
-- can have a hundred digits, beyond every fixed-width integer type).
CREATE OR REPLACE MACRO decimal_mod(s, m) AS
    ((CASE WHEN starts_with(s, '-') THEN -1 ELSE 1 END)
     * list_reduce(list_transform(string_split(ltrim(s, '-'), ''), lambda c: CAST(c AS BIGINT)),
                   lambda acc, d: (acc * 10 + d) % m, 0) % m + m) % m;

-- The canonical decimal text of a + b in the group, for decimal texts a and b of any length.
CREATE OR REPLACE MACRO group_sum_text(a, b, group_name) AS
    CASE WHEN group_modulus(group_name) IS NULL
         THEN CAST(TRY_CAST(a AS BIGNUM) + TRY_CAST(b AS BIGNUM) AS VARCHAR)
         ELSE CAST((decimal_mod(a, group_modulus(group_name)) + decimal_mod(b, group_modulus(group_name)))
                   % group_modulus(group_name) AS VARCHAR)
    END;

-- One scored trial per family unit and variant. Several trials can map to one unit only when the
-- same model name was run with different settings or generator versions; the latest scored one
-- stands for the unit. parser_version is the matching rule the score used (e.g. 'math/2').
-- answer_key is the canonical answer stored with the final step's parse (tasks.parse.answer_key:
-- 3/2, 1.5 and 1.50 are all '1.5'; sqrt(20) is '2*sqrt(5)'); a parse row written before that
-- column existed falls back to the parsed value (integer and text values are their own keys; math
-- answers of parser math/1 need `invarbench rescore` to get theirs). NULL when nothing parsed.
CREATE OR REPLACE VIEW family_trials AS
SELECT
    ts.model, ts.suite, ts.task, ts.category, ts.prompt_style, ts.family_id, i.seed, ts.sample_idx,
    ts.variant, variant_rank(ts.variant) AS variant_rank, ts.trial_id, ts.item_id, ts.status,
    ts.status = 'correct' AS is_correct, ts.predicted,
    CASE WHEN ts.predicted IS NOT NULL THEN coalesce(p.canonical, ts.predicted) END AS answer_key,
    ts.answer_type, regexp_extract(ts.scorer_version, '\+(.+)$', 1) AS parser_version, ts.scored_at
FROM trial_scores ts
JOIN items i USING (item_id)
LEFT JOIN parses p ON p.response_id = json_extract_string(ts.response_ids, '$[#-1]')
QUALIFY row_number() OVER (
    PARTITION BY ts.model, ts.suite, ts.task, ts.category, ts.prompt_style, ts.family_id, i.seed,
                 ts.sample_idx, ts.variant
    ORDER BY ts.scored_at DESC, ts.trial_id
) = 1;

-- Pairs of answers of one family unit (variant_a ranked before variant_b), with whether they are
-- the same answer: two correct answers are (both agree with the family's one gold, even when
-- written at different precisions: 54.7356 and 54.74 against 54.74); a correct and a not correct
-- one are not; two not correct ones are when their answer keys are equal. An unparsable answer
-- equals nothing; same_answer is NULL when either side is an error. Everything here is stored at
-- parse and score time, so the verdict is known right after any sweep, import or rescore.
CREATE OR REPLACE VIEW family_answer_pairs AS
SELECT
    a.model, a.suite, a.task, a.category, a.prompt_style, a.family_id, a.seed, a.sample_idx,
    a.variant AS variant_a, b.variant AS variant_b, a.trial_id AS trial_id_a, b.trial_id AS trial_id_b, a.answer_type,
    a.status AS status_a, b.status AS status_b, a.is_correct AS correct_a, b.is_correct AS correct_b,
    a.predicted AS predicted_a, b.predicted AS predicted_b,
    CASE
        WHEN a.status = 'error' OR b.status = 'error' THEN NULL
        WHEN a.is_correct AND b.is_correct THEN true
        WHEN a.is_correct OR b.is_correct THEN false
        ELSE coalesce(a.answer_key = b.answer_key, false)
    END AS same_answer
FROM family_trials a
JOIN family_trials b
  ON a.model = b.model AND a.suite = b.suite AND a.task = b.task AND a.category = b.category
 AND a.prompt_style = b.prompt_style AND a.family_id = b.family_id AND a.seed = b.seed
 AND a.sample_idx = b.sample_idx
 AND (a.variant_rank, a.variant) < (b.variant_rank, b.variant);

-- Family units over a variant set V, one row per unit, from every run or only `for_run`'s trials.
-- V is `variant_list` (in that order) when given, else every variant present in the unit's
-- (model, suite, task, category, prompt_style) group, ordered by variant_rank then name. A unit is complete when it has a scored (non-error)
-- answer on every variant of V; only complete units count for invariance, consistency and flips.
-- pattern: one letter per variant of V in order, C correct, W not correct (wrong or unparsable).
-- consistent: all answers parsed and pairwise the same answer (family_answer_pairs).
-- Groups with a single variant have nothing to compare and are left out.
CREATE OR REPLACE MACRO family_units_over(variant_list := NULL, for_run := NULL) AS TABLE
WITH ft AS (
    SELECT * FROM family_trials
    WHERE (variant_list IS NULL OR list_contains(variant_list, variant))
      AND (for_run IS NULL OR trial_id IN (SELECT trial_id FROM run_trials WHERE run_id = for_run))
),
present AS (
    SELECT DISTINCT model, suite, task, category, prompt_style, variant, variant_rank FROM ft
),
variant_sets AS (
    SELECT model, suite, task, category, prompt_style,
           coalesce(variant_list, list(variant ORDER BY variant_rank, variant)) AS variants
    FROM present
    GROUP BY ALL
),
pair_verdicts AS (
    SELECT p.model, p.suite, p.task, p.category, p.prompt_style, p.family_id, p.seed, p.sample_idx,
           count(*) FILTER (WHERE NOT p.same_answer) AS n_unequal
    FROM family_answer_pairs p
    WHERE p.status_a <> 'error' AND p.status_b <> 'error'
      AND p.trial_id_a IN (SELECT trial_id FROM ft) AND p.trial_id_b IN (SELECT trial_id FROM ft)
    GROUP BY ALL
),
units AS (
    SELECT
        model, suite, task, category, prompt_style, family_id, seed, sample_idx,
        any_value(answer_type) AS answer_type,
        count(*) FILTER (WHERE status <> 'error') AS n_scored,
        count(*) FILTER (WHERE status = 'correct') AS n_correct,
        count(*) FILTER (WHERE status = 'wrong') AS n_wrong,
        count(*) FILTER (WHERE status = 'unparsable') AS n_unparsable,
        count(*) FILTER (WHERE status = 'error') AS n_error,
        list(variant ORDER BY coalesce(list_position(variant_list, variant), variant_rank), variant)
            FILTER (WHERE status <> 'error') AS scored_variants,
        string_agg(CASE WHEN status = 'correct' THEN 'C' ELSE 'W' END, ''
                   ORDER BY coalesce(list_position(variant_list, variant), variant_rank), variant)
            FILTER (WHERE status <> 'error') AS pattern,
        list(predicted ORDER BY coalesce(list_position(variant_list, variant), variant_rank), variant)
            FILTER (WHERE status <> 'error') AS answers
    FROM ft
    GROUP BY ALL
)
SELECT
    u.model, u.suite, u.task, u.category, u.prompt_style, len(v.variants) AS k, v.variants,
    u.family_id, u.seed, u.sample_idx, u.answer_type,
    coalesce(u.scored_variants = v.variants, false) AS complete,
    u.n_scored, u.n_correct, u.n_wrong, u.n_unparsable, u.n_error,
    CASE WHEN u.scored_variants = v.variants THEN u.pattern END AS pattern,
    CASE WHEN u.scored_variants = v.variants THEN u.answers END AS answers,
    CASE WHEN u.scored_variants = v.variants THEN u.n_correct = len(v.variants) END AS invariant,
    CASE
        WHEN u.scored_variants IS DISTINCT FROM v.variants THEN NULL
        WHEN u.n_unparsable > 0 OR coalesce(pv.n_unequal, 0) > 0 THEN false
        ELSE true
    END AS consistent
FROM units u
JOIN variant_sets v USING (model, suite, task, category, prompt_style)
LEFT JOIN pair_verdicts pv USING (model, suite, task, category, prompt_style, family_id, seed, sample_idx)
WHERE len(v.variants) >= 2;
