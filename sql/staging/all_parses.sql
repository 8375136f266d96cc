-- all_parses: one row per parse written, every parser version (intermediate/latest_parses.sql
-- picks the latest per response).
-- depends_on: raw_parses

CREATE OR REPLACE VIEW all_parses AS
SELECT * FROM raw_parses;
