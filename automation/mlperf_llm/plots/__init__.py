"""Plots for the results pages: the data they show (timings.py) and the SVG drawn from it (draw.py)."""
