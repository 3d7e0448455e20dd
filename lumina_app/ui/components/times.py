"""Short times for narrow places: "14:03" today, "Mar 3" on any other day (local time)."""

from __future__ import annotations

import reflex as rx

_OTHER_DAY = "MMM D"
SHORT_CALENDAR = {
    "sameDay": "HH:mm",
    "lastDay": _OTHER_DAY,
    "lastWeek": _OTHER_DAY,
    "nextDay": _OTHER_DAY,
    "nextWeek": _OTHER_DAY,
    "sameElse": _OTHER_DAY,
}


def short_time(time, **props) -> rx.Component:
    return rx.moment(time, calendar=SHORT_CALENDAR, **props)
