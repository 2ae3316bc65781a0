"""abeval's store on Apache Spark, through Spark Connect (docs/design/spark.md).

:mod:`~abeval.store.backends.spark.backend` is what a Spark store does its own way
(:mod:`abeval.store.backends`), :mod:`~abeval.store.backends.spark.dialect` turns
abeval's SQL into Spark SQL, :mod:`~abeval.store.backends.spark.connection` gives a
Spark session the connection calls the store code makes,
:mod:`~abeval.store.backends.spark.database` opens ``--db sc://...``. Nothing here
but the backend and its column types is imported unless a Spark URL is used.
"""
