"""In and out: frame sources (cameras, streams, files), frames, output folders and sinks, the overlay."""
