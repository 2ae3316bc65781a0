"""abeval's store on Apache Spark, through Spark Connect (docs/design/spark.md).

:mod:`~abeval.store.spark.dialect` turns abeval's SQL into Spark SQL,
:mod:`~abeval.store.spark.connection` gives a Spark session the connection calls
the store code makes, :mod:`~abeval.store.spark.store` opens ``--db sc://...``.
Nothing here is imported unless a Spark URL is used.
"""
