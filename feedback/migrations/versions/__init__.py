"""Revision files."""
