-- Macros: the Wilson score interval, the interval every accuracy view reports.

-- Wilson score interval of k successes in n trials (NULL when n = 0), clamped to [0, 1] against
-- rounding (k = 0 otherwise gives -1e-17).
CREATE OR REPLACE MACRO wilson_lo(k, n, z := 1.959963984540054) AS
    CASE WHEN n > 0 THEN greatest(0.0,
        (k / n + z * z / (2 * n) - z * sqrt(k / n * (1 - k / n) / n + z * z / (4 * n * n))) / (1 + z * z / n))
    END;

CREATE OR REPLACE MACRO wilson_hi(k, n, z := 1.959963984540054) AS
    CASE WHEN n > 0 THEN least(1.0,
        (k / n + z * z / (2 * n) + z * sqrt(k / n * (1 - k / n) / n + z * z / (4 * n * n))) / (1 + z * z / n))
    END;
