"""envs/orthanc_explorer"""
