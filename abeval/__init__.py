"""abeval: A/B test and offline ranking evaluation for recommender systems."""

__version__ = "0.1.0"

from abeval import signals as _signals  # the standard library only

if _signals.is_the_program():  # first thing: a signal from now on exits cleanly
    _signals.install()
