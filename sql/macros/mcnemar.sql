-- Macros: the exact McNemar test of the paired tests (marts/paired_tests.sql).

-- Exact two-sided McNemar p-value: min(1, 2·P(X <= min(b, c))), X ~ Bin(b + c, 1/2); each
-- binomial term is computed in log space (lgamma) so large counts neither overflow nor underflow.
CREATE OR REPLACE MACRO mcnemar_exact_p(b, c) AS
    CASE WHEN b + c = 0 THEN 1.0 ELSE least(1.0, 2 * list_sum(list_transform(
        range(least(b, c) + 1),
        lambda i: exp(lgamma(b + c + 1) - lgamma(i + 1) - lgamma(b + c - i + 1) - (b + c) * ln(2))
    ))) END;

-- The number of answer pairs of a group of paired_outcomes rows (each counts `n` pairs) that
-- satisfy `condition`: what count(*) FILTER (WHERE condition) was over one row per pair.
CREATE OR REPLACE MACRO n_pairs_where(n, condition) AS CAST(coalesce(sum(n) FILTER (WHERE condition), 0) AS BIGINT);
