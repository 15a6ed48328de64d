"""The paper order engine: previews, places, fills, conditional links and stored orders."""
