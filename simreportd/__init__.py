"""simreportd: an event-sourced report daemon for social simulations."""

__version__ = "0.1.0"
