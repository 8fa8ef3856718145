#!/usr/bin/env python3
"""The committed defect: decides correctly on GitHub and never tells Slack.

Same decisions as merge_and_report.py; the report step is missing. Against
tasks/cross-twin-merge-report.md it fails on the Slack criteria alone.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from merge_and_report import decide  # noqa: E402

if __name__ == "__main__":
    decide(report=False)
