"""The store's SQL builders: the queries that turn an experiment's events into
sums, composed from named parts (:mod:`abeval.store.sql.parts`).

One module per family: the analysed population, the online metrics' per-user
pass and what is read from it (arm and segment moments, the daily series, the
health counts, the caps, the ingests behind a report), the replay's ranked
lists, and the off-policy estimates' sums. Each returns SQL text or runs it on
a connection it is given; none opens a store. This package re-exports nothing:
import each name from its module.
"""
