-- Macros: arithmetic in the symmetry suite's additive groups, for checking associativity calls
-- (intermediate/associativity_steps.sql).

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
