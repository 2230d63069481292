"""Demonstration datasets on disk: LeRobot dataset folders read into the project's batches
(:mod:`.lerobot_format`), written by the project's scripted experts (:mod:`.lerobot_writer`)
and trained on by a project ACT policy (:mod:`.train_from_folder`)."""
