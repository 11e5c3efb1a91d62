"""The table: layout, positions and hands, the round tracker, round events and integrity alerts."""
