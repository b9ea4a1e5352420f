"""The model of one training step: the operations of a layer with their FLOPs and bytes, their time on an
accelerator, the topology and collectives, memory, the pipeline schedule, and their sum for one parallel layout.
The efficiency parameters in force (physical defaults, or a calibration file's fitted values) live here too."""
