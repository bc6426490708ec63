"""envs/orthanc"""
