"""Simulated experiment logs with known true effects.

:func:`simulate` returns an Arrow table in the event format (docs/architecture.md#the-event-format)
(plus one column per configured segment); :func:`write_events` writes one to
``.csv``, ``.csv.gz``, ``.parquet`` or ``.jsonl`` in chunks; :func:`expected_effects`
gives the truth the analysis should recover. Everything is vectorised (numpy)
and deterministic given :attr:`SimulationConfig.seed`.

The model
---------
Users are assigned to an arm with probabilities ``split`` (equal by default) and
to one value of each segment column (``device`` by default) with its share. The
first arm is the control. Segments carry no effect: every per-segment truth
equals the overall truth.

* Activity. User *u* has a rate ``λ_u ~ Gamma(shape=activity_dispersion,
  mean=requests_per_user - 1)``. In the experiment window the user makes
  ``1 + Poisson(λ_u)`` requests; the first is their exposure (an ``exposure``
  event at the same instant). Before it, in the ``pre_period_days`` leading up to
  their exposure, they make ``Poisson(λ_u · pre_period_days / days)`` requests.
  Pre-period events carry the user's assigned arm but were served and behave as
  control (nothing is treated before exposure), so pre-period metrics are a
  valid CUPED covariate: correlated with the post-period through ``λ_u`` and
  ``θ_u``, unaffected by the treatment.
* Candidates. A request has ``n = candidates`` distinct candidate items
  (``list_length`` by default) drawn from a catalogue with Zipf popularity
  ``p_i ∝ 1 / rank^item_popularity_exponent`` (item ids are a seeded
  permutation of the popularity ranks). Each candidate is relevant to the
  request independently with probability ``relevant_share``.
* Ranking (the logging policy). Candidates are ordered by a Plackett–Luce
  policy: a relevant candidate has weight ``w_arm``, an irrelevant one weight 1;
  the first ``L = list_length`` are shown. The control (and every pre-period
  request) uses ``w = control_relevance_weight``; each treatment arm uses the
  weight that yields its configured CTR lift (solved exactly, see below), so a
  positive lift means relevant items are ranked higher. ``propensity`` is the
  policy's marginal probability of showing that item at that position given
  the candidates and their relevance: ``P(relevant item at k) = q_k(R) / R``
  and ``P(irrelevant item at k) = (1 - q_k(R)) / (n - R)``, where ``q_k(R)`` is
  the probability that position *k* holds a relevant item when *R* of the *n*
  candidates are relevant.
* Popularity tilt (``popularity_tilt``, τ per arm, 0 by default). With
  probability τ a request's irrelevant candidates are put on the slots the
  draw gave to irrelevant items in popularity order (most popular first)
  instead of the draw's random order. Which slots hold a relevant item is
  unchanged, so clicks and every truth below are too; what is shown (its
  coverage, novelty, popularity) changes. An irrelevant item that is the
  *m*-th most popular irrelevant candidate then has propensity
  ``(1 - τ) (1 - q_k(R)) / (n - R) + τ t_k(R, m)``, with ``t_k(R, m)`` the
  probability that position *k* holds the *m*-th irrelevant draw (the same
  dynamic programme).
* Clicks (examination model). ``P(click) = θ_u · e_k · a``, where
  ``e_k`` is the examination probability of position *k* (``position_bias``,
  default ``1 / log2(k + 1)``), ``a = 1`` for a relevant item and
  ``irrelevant_attractiveness`` otherwise, and ``θ_u ~ Beta`` with concentration
  ``user_propensity_concentration`` and the mean that makes the control's CTR
  equal ``base_ctr``. Every factor is at most 1, so this is a probability.
* Purchases. A click leads to a purchase with probability
  ``base_purchase_rate · (1 + true_conversion_lift[arm])``; its ``value`` is
  lognormal with mean ``revenue_mean`` and log-scale ``revenue_sigma`` (rounded
  to cents, so ≥ 0). A purchase names the request and item of its click.
* Time. Exposures are uniform over the window (ending an hour early); later
  requests are uniform between the exposure and the end of the window; a click
  follows its impression by 1 s plus at most 10 min, a purchase its click by
  1 s plus at most 45 min; pre-period requests end an hour before exposure.
  Every event therefore falls inside its period.

True effects
------------
With ``E_w[a_k] = Σ_R Binomial(R; n, relevant_share) · (q_k(R) + (1 - q_k(R))
· irrelevant_attractiveness)``, the expected click-through rate of an arm with
weight *w* is ``E[θ] · (1/L) Σ_{k ≤ L} e_k E_w[a_k]``, and ``q_k(R)`` is computed
exactly by dynamic programming over the Plackett–Luce draws. Hence, per arm and
exactly (up to the float precision of the solver):

* CTR (Σ clicks / Σ impressions): ``base_ctr · (1 + true_ctr_lift[arm])``
  (by default +5% for every treatment arm);
* purchase per click: ``base_purchase_rate · (1 + true_conversion_lift[arm])``
  (by default +3%);
* clicks, purchases and revenue per user: ``requests_per_user · L`` times the
  per-impression rates, so their lifts are ``(1 + ctr lift)`` and ``(1 + ctr
  lift)(1 + conversion lift)`` minus 1; average order value has no effect.

:func:`expected_effects` returns all of these. The share of users with a
purchase has no closed form here (its lift is close to, and below, the
purchases-per-user lift). In the pre-period every arm has the control's truth.

Column ``propensity`` is present only with ``with_propensities`` and
``event_id`` only with ``with_event_ids``; ``position`` is set on impressions,
``value`` on purchases, ``request_id`` and ``item_id`` on all but exposures.
Ids: users ``u<n>``, requests ``r<n>``, items ``i<n>``, events
``<experiment>-<seed>-<row>`` (unique per row, and across simulations that differ
in experiment or seed). Rows are in time order within blocks of about a million
rows (blocks of users), not across them. ``ts`` is ``timestamp[ms, UTC]``; text
files carry it as ``2025-03-03T08:00:00.000Z``.

:mod:`~abeval.simulate.series` builds a history of such experiments whose
offline-to-online relation is known (docs/metrics.md#simulated-history), and
:mod:`~abeval.simulate.demo` the files and store of ``abeval demo``.

The package: :mod:`~abeval.simulate.config` (what to simulate),
:mod:`~abeval.simulate.effects` (the ranking maths and the truth),
:mod:`~abeval.simulate.model` (the per-configuration model and
:func:`expected_effects`), :mod:`~abeval.simulate.events` (the log, block by
block) and :mod:`~abeval.simulate.writers` (files).
"""

from abeval.simulate.config import (
    DEFAULT_CONVERSION_LIFT,
    DEFAULT_CTR_LIFT,
    EVENT_COLUMNS,
    SimulationConfig,
)
from abeval.simulate.effects import (
    ArmTruth,
    ExpectedEffects,
    irrelevant_at_position,
    relevant_at_position,
)
from abeval.simulate.events import (
    EVENT_TYPES,
    event_schema,
    iter_event_batches,
    simulate,
    simulate_with_target,
)
from abeval.simulate.model import expected_effects, expected_rows_per_user, users_for_rows
from abeval.simulate.writers import FORMATS, EventFormat, format_of, write_events

__all__ = [
    "DEFAULT_CONVERSION_LIFT",
    "DEFAULT_CTR_LIFT",
    "EVENT_COLUMNS",
    "EVENT_TYPES",
    "FORMATS",
    "ArmTruth",
    "EventFormat",
    "ExpectedEffects",
    "SimulationConfig",
    "event_schema",
    "expected_effects",
    "expected_rows_per_user",
    "format_of",
    "irrelevant_at_position",
    "iter_event_batches",
    "relevant_at_position",
    "simulate",
    "simulate_with_target",
    "users_for_rows",
    "write_events",
]
