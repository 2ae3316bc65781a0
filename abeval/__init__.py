"""abeval: A/B test and offline ranking evaluation for recommender systems."""

__version__ = "0.1.0"
