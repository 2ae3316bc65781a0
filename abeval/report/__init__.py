"""Presenters: the experiment report and the offline evaluation as text and HTML.

Nothing here computes a statistic; every number comes from the report model
(:mod:`abeval.analysis.report_model`) or the evaluation result, and becomes text
through :mod:`abeval.formatting`.

- :mod:`~abeval.report.text`: the experiment report for the terminal.
- :mod:`~abeval.report.html`: the experiment report page (``build_context``,
  ``render_html``), with its context in :mod:`~abeval.report.html_context` and
  one builder per section in :mod:`~abeval.report.html_sections`.
- :mod:`~abeval.report.evaluate_html`: the evaluation page, with its context in
  :mod:`~abeval.report.evaluate_context`.
- :mod:`~abeval.report.templates`: the Jinja environment both pages use
  (templates in the top-level ``reports/`` folder, ``base.html.j2`` the shell).
- :mod:`~abeval.report.charts`: SVG geometry; :mod:`~abeval.report.tones`: which
  colour a result gets, from the metric's direction on its definition.
"""
