-- family_units: one row per family unit (intermediate/family_trials.sql) over every variant it has, stored.
-- depends_on: family_unit_rows
-- materialised: family_id, model

-- Stored so that the family marts (invariance, flip patterns through family_units_over; the
-- variant pairs of paired_outcomes) read one row per unit instead of grouping every trial by
-- family_unit and joining the trials of a unit with each other: at 10,000,000 trials that
-- grouping and self-join took 45 s of CPU and 9 GB per mart. Columns: family_unit_rows'.
CREATE OR REPLACE VIEW family_units AS
SELECT * FROM family_unit_rows();
