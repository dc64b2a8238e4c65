"""Three ways to run the same core: A3C threads, GA3C (runners, one predictor, trainers) and Ray (ray/).
doom_a3c/modes/build.py makes what every mode needs from a config. The modes never import each other, nor the run layer.
"""
